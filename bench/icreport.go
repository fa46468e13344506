package main

import (
	"fmt"
	"os"
	"strings"
)

// The instruction section of BENCHMARKS.md, between these two lines, so
// that a run of the instructions section alone (-sections instructions)
// rewrites it and keeps the rest of the file.
const (
	icBegin = "<!-- instructions: written by make bench (-sections instructions) -->"
	icEnd   = "<!-- /instructions -->"
)

// timeHeading opens the timed part of BENCHMARKS.md, after the
// instruction section.
const timeHeading = "## Time per decision"

// icFloorRatio is r's figure in workload w over the floor's.
func (s icServer) icFloorRatio(r icResult, w int) float64 {
	return r.perCall[w] / s.floor.perCall[w]
}

// cheapestPeer is the peer or baseline doing r's job with the fewest
// instructions in workload w.
func (s icServer) cheapestPeer(r icResult, w int) (icResult, bool) {
	var best icResult
	found := false
	for _, p := range s.results {
		if r.c.job == "" || p.c.job != r.c.job || (p.c.group != groupPeer && p.c.group != groupBaseline) {
			continue
		}
		if !found || p.perCall[w] < best.perCall[w] {
			best, found = p, true
		}
	}
	return best, found
}

// timedRatio is r's timed cost over the floor in the same run's main
// table, if it ran.
func (rep report) timedRatio(kind string, name string) (float64, bool) {
	for _, sr := range rep.servers {
		if string(sr.kind) != kind {
			continue
		}
		if res, ok := sr.find(name); ok && len(res.rounds) > 0 {
			return res.best().ratio, true
		}
	}
	return 0, false
}

// instructionSection writes the instruction tables, between icBegin and
// icEnd.
func (rep report) instructionSection(b *strings.Builder) {
	b.WriteString(icBegin + "\n")
	b.WriteString("## Instructions per decision (the deciding figure)\n\n")
	fmt.Fprintf(b, "Counted on %s. ", rep.started.UTC().Format("2006-01-02 15:04 MST"))
	b.WriteString(`Instructions executed inside the server's ` + "`call()`" + ` (its command dispatch: for EVALSHA and FCALL the
whole script, each ` + "`redis.call`" + ` included) under valgrind's callgrind, per decision, each row on a flushed server
after one decision of its own, on a clock the bench sets (redis_rate's GCRA and the **server clock** rows read the
server's ` + "`TIME`" + ` instead). Debian's redis-server 7.0 and valkey-server 8.0 are stripped, but ` + "`call`" + ` is in their
dynamic symbol table: ` + "`valgrind --tool=callgrind --collect-atstart=no --toggle-collect=call`" + `, with LASTSAVE
(` + "`--zero-before=lastsaveCommand`" + `) and ECHO (` + "`--dump-before=echoCommand`" + `) around the counted calls and their own
share taken off (` + "`bench/callgrind.go`" + `). **The Lua garbage collector is set apart**: by default its work lands on
whichever call triggers it (a step after every 50th script call, and one inside a script per KiB it allocates), at a
cost set by where its cycle is over the whole Lua heap, so by the rows run before, not by the row counted: one periodic
step cost from 56k to 455k instructions (1k to 9k per call) by the row's place in a run, and a peer's own calls 6-10%
more at the end of the full run than at the end of a short one. The bench sets both Lua states (EVAL's and FCALL's)
to collect only in whole cycles at the periodic call (` + "`collectgarbage('setstepmul', 1000000)`" + `, and a pause no
allocation reaches) and takes those calls (` + "`lua_gc`" + `) off each count: a figure is the script's work and the server's
for it, and a run of a few rows gives every row the full run's figures within 1.6% (most within 0.5%). A count does
not depend on the machine's load; what is left is the server's hash seed, random at each start (its dictionaries'
key comparisons).
Workloads: **fresh keys**, one decision on each of 100 new keys; **4 calls per key**, 25 keys, 1 ms apart (the
first on a fresh key); **denied**, 3 keys each hammered with 100 calls within 0.1 s (not counted), then 50 more
counted: the limit is spent, every counted call is denied (the 3-limit rows are the login case: 1 per 5 s, 5 per hour,
1,000 per day); **long-lived**, 3 keys each decided twice a second for 30 s (not counted: 60 decisions, a little
faster than the 100 per minute of the 1-limit rows, so their state lives on), then 50 calls half a second apart. Cells: thousands of instructions, then the ratio to the floor (INCR, PEXPIRE on first use) in the same
workload. **/ cheapest peer**: the ratio to the cheapest peer or seed design doing the same job in that workload;
a minimum row there (*integers checked and converted*: the commands, ratelua's arguments checked canonical and
converted, TIME converted, nothing else; *a token bucket's job*: that, the state a number at the clock's precision,
the refill, a denial that writes nothing, the reply's four figures, and no bound, reservation or clock check of the
contract; *ar1's job*: the same for a decaying count, its decay and its logarithms; *the whole contract*: a job row
with what ratelua's contract adds for the call it answers (its count, unit, mode, keys and arguments checked, the bounds
of now and of the limit, the state read without raising: another type, a text state or a clock far ahead refused,
and for ar1 each logarithm checked exact; the replies bounded by 2^52 and the state written in the contract's layout,
text where a number would not hold it); *the newest event read*: an exact
log's arguments checked and converted, the newest event's time read and parsed, the window counted by ZCARD, the
event added and the TTL set when allowed, the oldest event read when denied, valid where every event is in the window,
as in these four workloads) is a bound: no script doing that job under ratelua's contract costs less. Every minimum
row runs on state keys of the length of the ratelua row's it stands for (a ratelua state key's form,
` + "`<prefix>:{<event key>}:<script>:v<N>:<hash>`" + `): the server's work grows with a key's length (its hash in every lookup,
its copies), and a shorter key would count that share as the script's.
Why the peers cost less on Valkey 8 than on Redis 7.0 while ratelua costs the same on both: the peers pass numbers
to ` + "`redis.call`" + `, which Redis 7.0 turns into text by ` + "`snprintf(\"%.17g\")`" + ` (glibc's floating-point printer, about 2,000
instructions a number; the seeds' ZSET log sends four a call) and Valkey 8, like Redis 7.2 and later, by
` + "`fpconv_dtoa`" + ` (an integer by ` + "`ull2string`" + `, a few hundred); ratelua's scripts pass their numbers as text made by
` + "`string.format('%d')`" + ` (printf's integer path) on Redis 7.0, and token_bucket, ar1 and zset_log v7 pass numbers where
` + "`redis.REDIS_VERSION_NUM`" + ` says the server converts them cheaply.
`)
	if len(rep.servers) > 0 {
		b.WriteString("**timed / floor**: the usec-per-call ratio of the main table below (same run), for comparison.\n")
	}
	b.WriteString("\n")
	for _, s := range rep.instructions {
		fmt.Fprintf(b, "### %s %s\n\n", s.kind, s.version)
		b.WriteString("| row |")
		for _, w := range icWorkloads {
			fmt.Fprintf(b, " %s |", w.name)
		}
		timed := len(rep.servers) > 0
		if timed {
			b.WriteString(" timed / floor |")
		}
		b.WriteString("\n|---|")
		for range icWorkloads {
			b.WriteString("---:|")
		}
		if timed {
			b.WriteString("---:|")
		}
		b.WriteString("\n")
		rows := append([]icResult{s.floor}, s.results...)
		for _, r := range rows {
			fmt.Fprintf(b, "| %s |", r.c.name)
			for w := range icWorkloads {
				fmt.Fprintf(b, " %.1fk · %.2f |", r.perCall[w]/1000, s.icFloorRatio(r, w))
			}
			if timed {
				if x, ok := rep.timedRatio(string(s.kind), r.c.name); ok {
					fmt.Fprintf(b, " %.2f |", x)
				} else {
					b.WriteString(" |")
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
		peerTable := false
		for _, r := range s.results {
			// ratelua's rows, and the minimum rows given a job (a bound
			// on the ratio of the rows doing that job)
			if r.c.group != groupRatelua && r.c.group != groupMinimum {
				continue
			}
			if _, ok := s.cheapestPeer(r, 0); !ok {
				continue
			}
			if !peerTable {
				fmt.Fprintf(b, "**/ cheapest peer** on %s (the peer named per workload):\n\n| row |", s.kind)
				for _, w := range icWorkloads {
					fmt.Fprintf(b, " %s |", w.name)
				}
				b.WriteString("\n|---|")
				for range icWorkloads {
					b.WriteString("---|")
				}
				b.WriteString("\n")
				peerTable = true
			}
			fmt.Fprintf(b, "| %s |", r.c.name)
			for w := range icWorkloads {
				p, _ := s.cheapestPeer(r, w)
				fmt.Fprintf(b, " **%.2f** (%s) |", r.perCall[w]/p.perCall[w], p.c.short)
			}
			b.WriteString("\n")
		}
		if peerTable {
			b.WriteString("\n")
		}
		s.targetTable(b)
	}
	b.WriteString(icEnd + "\n")
}

// spliceInstructions replaces the instruction section of the file at path
// (between icBegin and icEnd) by section, or puts it after the file's
// first line when it has none; a missing file gets a title and section.
func spliceInstructions(path, section string) error {
	old, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return os.WriteFile(path, []byte("# Benchmarks\n\n"+section), 0o644)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	text := string(old)
	i, j := strings.Index(text, icBegin), strings.Index(text, icEnd)
	switch {
	case i >= 0 && j > i:
		end := j + len(icEnd)
		if end < len(text) && text[end] == '\n' {
			end++
		}
		text = text[:i] + section + text[end:]
	default:
		k := strings.Index(text, "\n\n")
		if k < 0 {
			k = len(text)
		} else {
			k += 2
		}
		rest := text[k:]
		if !strings.Contains(rest, timeHeading) {
			rest = timeHeading + "\n\n" + rest
		}
		text = text[:k] + section + "\n" + rest
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
