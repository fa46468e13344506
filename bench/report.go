package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratelua/ratelua/testbench"
)

type result struct {
	c   contender
	mem memory
	// memFloor is the row's memory floor: a counter (INCR + PEXPIRE) per
	// state key under a key of the same length, measured in the same run.
	memFloor memory
	rounds   []measurement
}

// best is the steady round with the lowest ratio to the floor, or the
// lowest of all rounds if none is steady (for the floor itself: the lowest
// cost).
func (r result) best() measurement {
	var b measurement
	found := false
	for _, m := range r.rounds {
		if !m.steady && m.ratio != 0 {
			continue
		}
		if !found || (m.ratio < b.ratio) || (m.ratio == 0 && m.usec < b.usec) {
			b, found = m, true
		}
	}
	if found {
		return b
	}
	for i, m := range r.rounds {
		if i == 0 || m.ratio < b.ratio {
			b = m
		}
	}
	return b
}

// maxPerSec is the most decisions per second of any round.
func (r result) maxPerSec() float64 {
	var x float64
	for _, m := range r.rounds {
		x = max(x, m.perSec)
	}
	return x
}

// allRounds lists the ratio of every round.
func (r result) allRounds() string {
	var all []string
	for _, x := range r.rounds {
		mark := ""
		if !x.steady {
			mark = "~"
		}
		all = append(all, fmt.Sprintf("%.2f%s", x.ratio, mark))
	}
	return strings.Join(all, " ")
}

type serverResult struct {
	kind           testbench.Kind
	version        string
	floor          result
	results        []result // the main table
	sweeps         []result
	throughput     []throughput
	clusterVersion string
}

type report struct {
	cpu       string
	cpus      int
	goVersion string
	pinned    bool
	cfg       config
	started   time.Time
	client    []clientFigure
	servers   []serverResult
	charts    []chart
	// instructions: per server, the instruction counts (the instructions
	// section), first in BENCHMARKS.md.
	instructions []icServer
	// kept: by section name, the part of BENCHMARKS.md an earlier run
	// wrote for a section (sweep, client, cluster) that this run leaves
	// out, written again in its place (see keptPart).
	kept map[string]string
}

// memRatio is r's bytes per key and MEMORY USAGE over its memory floor's
// (a counter under a key of the same length as each of its state keys).
func (sr serverResult) memRatio(r result) (float64, float64) {
	return r.mem.bytesPerKey / r.memFloor.bytesPerKey, float64(r.mem.usage) / float64(r.memFloor.usage)
}

// find is the result of the row named name, if it was measured.
func (sr serverResult) find(name string) (result, bool) {
	for _, r := range sr.results {
		if r.c.name == name && len(r.rounds) > 0 {
			return r, true
		}
	}
	return result{}, false
}

// minimumRatio is r's best ratio to the floor over its minimum row's (the
// unavoidable commands of its job), if both were measured.
func (sr serverResult) minimumRatio(r result) (float64, bool) {
	m, ok := sr.find(r.c.minimum)
	if r.c.minimum == "" || !ok || len(r.rounds) == 0 {
		return 0, false
	}
	return r.best().ratio / m.best().ratio, true
}

// refRatio is r's best ratio to the floor over its reference row's (8
// limits over 1 limit, 10,000 buckets over 10), if both were measured.
func (sr serverResult) refRatio(r result) (float64, bool) {
	ref, ok := sr.find(r.c.ref)
	if r.c.ref == "" || !ok || len(r.rounds) == 0 {
		return 0, false
	}
	return r.best().ratio / ref.best().ratio, true
}

// memNoise is how far apart two measurements of the same state's bytes
// per key may be: after the measures of measureMemory, runs of identical
// scripts (v5 and v6 rows before v6 changed anything) agreed within 0.3%
// for the one-string and sorted-set states, and sliding_window's hash,
// whose buckets depend on the timing of the events, within about 1%. "At
// most v5's" is held when MEMORY USAGE of one key's state (exact) is at
// most v5's and bytes per key at most 2% above v5's.
const memNoise = 1.02

// memRef is the memory of r's memRef row (v5's), if both were measured.
func (sr serverResult) memRef(r result) (memory, bool) {
	for _, x := range sr.results {
		if x.c.name == r.c.memRef && r.c.memRef != "" && x.mem.bytesPerKey > 0 {
			return x.mem, true
		}
	}
	return memory{}, false
}

// peerHeld reports whether x, a ratio to the best peer, meets c's target.
func peerHeld(c contender, x float64) bool {
	if c.peerStrict {
		return x < c.peerMax
	}
	return x <= c.peerMax
}

// peerTarget is c's peer target as text.
func peerTarget(c contender) string {
	if c.peerStrict {
		return fmt.Sprintf("< %g", c.peerMax)
	}
	return fmt.Sprintf("<= %.2f", c.peerMax)
}

// bestPeer is the cheapest peer or baseline (lowest best ratio to the
// floor) doing r's job in the same run; ok is false when there is none.
func (sr serverResult) bestPeer(r result) (peer result, ok bool) {
	if r.c.group != groupRatelua || r.c.job == "" {
		return result{}, false
	}
	for _, p := range sr.results {
		if (p.c.group != groupPeer && p.c.group != groupBaseline) || len(p.rounds) == 0 {
			continue
		}
		if p.c.job != r.c.job {
			continue
		}
		if !ok || p.best().ratio < peer.best().ratio {
			peer, ok = p, true
		}
	}
	return peer, ok
}

// peerRatio is r's best ratio to the floor over its best peer's, as a
// table cell.
func (sr serverResult) peerRatio(r result) string {
	p, ok := sr.bestPeer(r)
	if !ok {
		return "—"
	}
	return fmt.Sprintf("**%.2f** vs %s", r.best().ratio/p.best().ratio, p.c.short)
}

// sweep returns the sweep results of one kind, in order of x.
func (sr serverResult) sweep(kind string) []result {
	var out []result
	for _, r := range sr.sweeps {
		if r.c.sweep == kind {
			out = append(out, r)
		}
	}
	return out
}

// sweepRatio is the best ratio at x = to over the one at x = from, if both
// were measured.
func (sr serverResult) sweepRatio(kind string, from, to float64) (float64, bool) {
	var a, b float64
	for _, r := range sr.sweep(kind) {
		switch r.c.x {
		case from:
			a = r.best().ratio
		case to:
			b = r.best().ratio
		}
	}
	return b / a, a > 0 && b > 0
}

func (rep report) markdown() (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	var kept []string
	for _, name := range keptSections {
		if !rep.cfg.has(name) && rep.kept[name] != "" {
			kept = append(kept, name)
		}
	}
	keptNote := ""
	if len(kept) > 0 {
		keptNote = "; kept from an earlier run: " + strings.Join(kept, ", ")
	}
	fmt.Fprintf(&b, "Written by `make bench` (`bench/`, a separate Go module) on %s in %v; sections: %s%s.\n\n",
		rep.started.UTC().Format("2006-01-02 15:04 MST"), time.Since(rep.started).Round(time.Second), strings.Join(rep.cfg.sections, ", "), keptNote)
	if s := rep.cfg.only.String(); s != "" {
		fmt.Fprintf(&b, "**Subset run**: only the contenders matching `%s`.\n\n", s)
	}
	if len(rep.instructions) > 0 {
		rep.instructionSection(&b)
		b.WriteString("\n" + timeHeading + "\n\n")
	}
	pin := "server pinned to CPU 0 and the load generator to CPU 1 (`taskset -apc`)"
	if !rep.pinned {
		pin = "NOT pinned (taskset unavailable or fewer than 2 CPUs)"
	}
	machine := fmt.Sprintf("Measured on %s. Machine: %s, %d CPUs, %s; %s. Load: %d concurrent callers over 10,000 event keys (uniformly random), %v per measurement after %v of warm-up; best of %d rounds.\n\n",
		rep.startedText(), rep.cpu, rep.cpus, rep.goVersion, pin, rep.cfg.callers, rep.cfg.dur, rep.cfg.warm, rep.cfg.rounds)
	var charts strings.Builder
	if len(rep.charts) > 0 {
		charts.WriteString("## Charts\n\n")
		for _, c := range rep.charts {
			rel, err := relLink(rep.cfg.out, c.path)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&charts, "![%s](%s)\n\n", c.title, rel)
		}
	}
	// The machine line and the charts go with the main part when it is
	// measured (a kept main part keeps those of its run).
	if !rep.cfg.has(sectionMain) && (rep.cfg.has(sectionSweep) || rep.cfg.has(sectionCluster)) {
		b.WriteString(machine)
	}
	rep.section(&b, sectionMain, func(b *strings.Builder) { rep.mainPart(b, machine, charts.String()) })
	rep.section(&b, sectionSweep, rep.sweepSection)
	rep.section(&b, sectionClient, rep.clientSection)
	rep.section(&b, sectionCluster, rep.throughputSection)
	if !rep.cfg.has(sectionMain) {
		b.WriteString(charts.String())
	}
	return b.String(), nil
}

// mainPart is the main section's part of the timed text: the machine
// and load, how it is measured, each server's table, the rows' limits,
// the charts and the targets.
func (rep report) mainPart(b *strings.Builder, machine, charts string) {
	b.WriteString(machine)
	b.WriteString(`**Server cost** is usec per decision from ` + "`INFO commandstats`" + ` (calls and usec of EVALSHA and EVAL; of FCALL
for the FCALL column, the same limiter with ` + "`Options.Functions`" + `, measured right after the EVALSHA one) after
` + "`CONFIG RESETSTAT`" + `. The **floor** is a one-command scripted decision (INCR, PEXPIRE on first use); it is
measured just before and just after each contender, and the ratio is contender / mean(the two floors). The quoted
round is the one with the lowest ratio among the steady rounds, those whose two floors agree within 25% (a round
marked ~ was disturbed: its floors differ by more, and it is quoted only when no round is steady); its absolute
figures are shown next to it. **Memory** is the growth of
` + "`used_memory`" + ` after one decision for each of 10,000 event keys on a flushed server, per key, and ` + "`MEMORY USAGE`" + `
(SAMPLES 0) of one key's state (all its keys, for designs with several), each divided by the row's **memory floor**'s:
a counter (the floor's INCR + PEXPIRE) under a key of exactly the length of each of the row's state keys (for the Go
API, "<prefix>:{<event key>}:<script>:v<N>:<hash>"; the cost floor's key, "floor:<event key>", is much shorter),
measured the same way in the same run. Rows on hot keys (the bucket rows) have no memory figures. To make two
measurements of the same state agree: ` + "`used_memory`" + ` is taken less ` + "`mem_clients_normal`" + ` (the clients' buffers,
which the server accounts on its timer: hz is raised to 100 during the phase and each reading waits 50 ms); an EXISTS
of every state key, pipelined right after the writes, finishes the server's incremental move of its key tables to
16,384 slots (both tables are allocated until then: 6.4 bytes per key); and the growth is divided by the event keys
whose state is still there (DBSIZE), since the shortest states may expire during the phase on a loaded machine (a token
bucket's lives until the bucket is full again, 0.6 s after one decision at 100 per minute): 256 callers write the keys,
a phase that lost more than 1% is run again (3 tries), and the cell says how many were left if some were lost. Runs of
identical scripts then agree within 0.3% (sliding_window's hash, whose buckets depend on the timing of the events,
within about 1%).
**/ best peer** is a ratelua row's cost / floor over that of the cheapest peer or baseline doing the same job in
the same run (named in the cell): token_bucket and ar1, 1 limit (one rate with a burst of 100 per minute), against
redis_rate's GCRA and the seeds' token bucket; zset_log against the seeds' ZSET log; sliding_window against seed
002's design with the same limits; "—" where no peer does the job. For the 8-limit and 10,000-bucket rows the
column gives instead the cost over the row named (the 1-limit row, the 10-bucket row).
**/ minimum** is a row's cost / floor over that of its job's **minimum** row in the same run: a script sending only
the commands the job cannot avoid, with no argument checks and no arithmetic beyond a counter (` + "`bench/minimum.go`" + `):
GET + SET PX for a state held in one string (token_bucket, ar1); ZCOUNT of the window, ZADD if under max, PEXPIRE for
an exact log in a sorted set (it never trims, so it is cheaper than any log that bounds its memory; the seeds' log
trims with ZREMRANGEBYSCORE and counts with ZCARD); HMGET + HSET + PEXPIRE of one hash field for sliding_window (whose
decision in the bucket of the last write reads two short fields and writes one), each on state keys as long as those
of the ratelua row it stands for. Where a target is missed, it says how much is the commands and how much the
script.

`)
	fmt.Fprintf(b, `**Targets** (issue 24), on the v%[1]d rows: token_bucket and ar1, 1 limit: cost <= 3.3 by EVALSHA and <= 3.0 by
FCALL, at most 0.90 of the best peer's by both, bytes per key <= 1.25x the memory floor's; zset_log: <= 4.3 by
EVALSHA, below the seeds' log by both; sliding_window (by EVALSHA): 1 limit <= 4.0, 3 limits <= 5.0, 8 limits <= 2x
the 1-limit row, 10,000 buckets <= 1.5x 10 buckets; every other row's memory at most v%[2]d's (MEMORY USAGE of one key's
state at most v%[2]d's, and bytes per key at most 2%% above v%[2]d's, the spread of two measurements of the same state). The v%[2]d rows carry no targets: they are what v%[1]d is
measured against.

`, newestVersion("token_bucket"), comparedVersion)
	for _, sr := range rep.servers {
		if len(sr.results) > 0 {
			rep.mainTable(b, sr)
		}
	}
	b.WriteString(`Limits: token_bucket 1 limit = 100 per minute (capacity 100); 3 limits = capacity 1 per 5 s, 5 per hour, 1000 per day;
ar1 1 limit = max 100, factor 2 per minute; 3 limits = max 1 / 5 s, 5 / h, 1000 / day, factor 2; zset_log = max 100 per minute;
sliding_window 1 limit = 100 per minute at 1 s (60 buckets); 3 limits = 1 per 5 s at 1 s, 5 per hour at 10 min, 1000 per day at 1 h.
Every ratelua limiter goes through the Go API (` + "`Allow`" + `: EVALSHA, or FCALL with ` + "`Options.Functions`" + `) with a caller
Clock returning real time. ` + fmt.Sprintf("The v%d rows run the Go API's default, the newest embedded version; the v%d rows pin `Options.Version: %[2]d` (v5 is the scripts of release 0.1.0, v6 of 0.2.0). Each version has its own key prefix of the same length (\"rl\", %q), so that", newestVersion("token_bucket"), comparedVersion, versionPrefix(comparedVersion)) + `
two versions keeping the same state layout do not read the state the other's rows left.
sliding_window 8 limits = the 1-limit row's limit first (it is the one that denies), then 2, 5, 10, 30 minutes, 1, 6 and
24 hours at 60 buckets each, max 200 to 1400; on the main load. The 10 and 10,000 buckets rows: sliding_window, 1 limit,
max 1,000,000 (no call is denied, every call records an event), window 2 s at a resolution of window / buckets, on 32 hot
keys, with a warm-up of 2.5 s before every measurement, so that each key holds a full window of events spread over its
buckets (the sweep's load, below); EVALSHA only. Concurrency: one decision is an acquire and the release of its lease
(two script calls, costed together), 100 slots, lease 30 s.
redis_rate/v10 = GCRA, 100 per minute, burst 100, on a go-redis v9 client (its own client; same callers and keys).

**Baselines**, re-implemented from the seed documents' text (each in its own file of ` + "`bench/`" + `, which says what it follows):
*seed 002 design* (` + "`seed002.go`" + `): per limit a list of "<slot>:<count>" nodes and a counter key, the limits as a JSON
argument decoded on every call, one LRANGE and one LPOP per expired slot, LRANGE + LSET/RPUSH to record, INCRBY or GET
of the counter, two EXPIREs; every event is recorded (the seed counts denied events too), times in seconds, all keys of
one event key under the hash tag {event key} so that it is one script call; run with the same limits as sliding_window.
*The seeds' token bucket* (` + "`seedbucket.go`" + `, seed 000): a hash of tokens and last refill, HMGET, HMSET + EXPIRE; 100 per minute.
*The seeds' ZSET log* (` + "`seedzset.go`" + `, seed 000): ZREMRANGEBYSCORE, ZCARD, ZADD + EXPIRE if under the limit, else EXPIRE +
ZRANGE 0 0 for the retry time; 100 per minute.

\* ` + "`github.com/redis/rueidis/rueidislimiter`" + ` cannot be fetched from this machine's module proxy (404), so its fixed-window
design (a counter key and an ":ex" key per identifier, GET + two SET PXAT on a new window, INCRBY) is written again from its
documented behaviour in ` + "`bench/contenders.go`" + `, sending the same commands, and run the same way, 1-minute window.

`)
	b.WriteString(charts)
	b.WriteString("## Targets\n\n```\n" + rep.targets() + "```\n")
}

// relLink is the path of file relative to dir, with forward slashes.
func relLink(dir, file string) (string, error) {
	ad, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("link: %w", err)
	}
	af, err := filepath.Abs(file)
	if err != nil {
		return "", fmt.Errorf("link: %w", err)
	}
	rel, err := filepath.Rel(ad, af)
	if err != nil {
		return "", fmt.Errorf("link: %w", err)
	}
	return filepath.ToSlash(rel), nil
}

// twin is the FCALL twin's result of a ratelua row, if it was measured.
func (sr serverResult) twin(r result) (result, bool) {
	for _, t := range sr.results {
		if t.c.functions && t.c.name == r.c.name+fcallSuffix {
			return t, true
		}
	}
	return result{}, false
}

// costTarget is the target cell of a row: the EVALSHA and FCALL cost
// targets, the peer target and the reference row's.
func (sr serverResult) costTarget(r result) string {
	var ts []string
	if r.c.cost > 0 {
		ts = append(ts, fmt.Sprintf("EVALSHA <= %g", r.c.cost))
	}
	if t, ok := sr.twin(r); ok && t.c.cost > 0 {
		ts = append(ts, fmt.Sprintf("FCALL <= %g", t.c.cost))
	}
	if r.c.peerMax > 0 {
		ts = append(ts, "/ best peer "+peerTarget(r.c)+" (both)")
	}
	if r.c.ref != "" && r.c.refMax > 0 {
		ts = append(ts, fmt.Sprintf("<= %gx the %s row", r.c.refMax, strings.TrimPrefix(r.c.ref, "ratelua ")))
	}
	return strings.Join(ts, "; ")
}

// memTarget is the memory target cell of a row.
func (sr serverResult) memTarget(r result) string {
	if r.c.mem > 0 {
		return fmt.Sprintf("<= %g", r.c.mem)
	}
	if m, ok := sr.memRef(r); ok {
		return fmt.Sprintf("<= v%d's: MEMORY USAGE %d, bytes/key %.1f (+2%%)", comparedVersion, m.usage, m.bytesPerKey)
	}
	return ""
}

func (rep report) mainTable(b *strings.Builder, sr serverResult) {
	fb := sr.floor.best()
	fmt.Fprintf(b, "## %s %s\n\n", sr.kind, sr.version)
	fmt.Fprintf(b, "Floor: %.2f usec per decision at best (%d measurements); its key (\"floor:<event key>\"), %.1f bytes per key, MEMORY USAGE %d.\n\n",
		fb.usec, len(sr.floor.rounds), sr.floor.mem.bytesPerKey, sr.floor.mem.usage)
	b.WriteString("| contender | EVALSHA cost / floor | FCALL cost / floor | target | / best peer, or / the row named (EVALSHA; FCALL) | / minimum (EVALSHA; FCALL) | usec/decision (EVALSHA; FCALL) | floor usec | decisions/s | all rounds, ratio (EVALSHA; FCALL) | bytes/key | memory floor bytes/key | / memory floor | MEMORY USAGE | / memory floor's | memory target |\n")
	b.WriteString("|---|---:|---:|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range sr.results {
		if r.c.functions {
			continue
		}
		m := r.best()
		fcall, peer, usec, rounds := "—", sr.peerRatio(r), fmt.Sprintf("%.2f", m.usec), r.allRounds()
		if x, ok := sr.refRatio(r); ok {
			peer = fmt.Sprintf("**%.2f** / %s", x, strings.TrimPrefix(r.c.ref, "ratelua "))
		}
		minimum := "—"
		if x, ok := sr.minimumRatio(r); ok {
			minimum = fmt.Sprintf("%.2f", x)
		}
		if t, ok := sr.twin(r); ok && len(t.rounds) > 0 {
			tm := t.best()
			fcall = fmt.Sprintf("**%.2f**", tm.ratio)
			usec += fmt.Sprintf("; %.2f", tm.usec)
			rounds += "; " + t.allRounds()
			if p := sr.peerRatio(t); p != "—" {
				peer += "; " + p
			}
			if x, ok := sr.minimumRatio(t); ok {
				minimum += fmt.Sprintf("; %.2f", x)
			}
		}
		mem := "— | — | — | — | —"
		if !r.c.noMem {
			mr, ur := sr.memRatio(r)
			live := ""
			if r.mem.live < float64(len(eventKeys)) {
				live = fmt.Sprintf(" (%.0f keys left)", r.mem.live)
			}
			mem = fmt.Sprintf("%.1f%s | %.1f | **%.2f** | %d | %.2f", r.mem.bytesPerKey, live, r.memFloor.bytesPerKey, mr, r.mem.usage, ur)
		}
		fmt.Fprintf(b, "| %s | **%.2f** | %s | %s | %s | %s | %s | %.2f | %.0f | %s | %s | %s |\n",
			r.c.name, m.ratio, fcall, sr.costTarget(r), peer, minimum, usec, m.floorUsec, m.perSec, rounds, mem, sr.memTarget(r))
	}
	b.WriteString("\n")
}

func (rep report) sweepSection(b *strings.Builder) {
	fmt.Fprintf(b, "## Scaling\n\nEvery sweep runs the newest version (v%d, the Go API's default).\n\n", newestVersion("sliding_window"))
	b.WriteString(sweepMethod + "\n\nSame method as the main table: the floor just before and after each point, ratio to their mean, best of the rounds; **/ first** is a point's cost / floor over the sweep's first point's.\n\n")
	for _, sr := range rep.servers {
		if len(sr.sweeps) == 0 {
			continue
		}
		fmt.Fprintf(b, "### %s %s\n\n", sr.kind, sr.version)
		b.WriteString("| sweep | contender | cost / floor | / first | usec/decision | floor usec | decisions/s | all rounds (ratio) |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---|\n")
		for _, kind := range []string{sweepBuckets, sweepLimits, sweepZSetMax} {
			rs := sr.sweep(kind)
			for _, r := range rs {
				m := r.best()
				fmt.Fprintf(b, "| %s | %s | **%.2f** | %.2f | %.2f | %.2f | %.0f | %s |\n",
					kind, r.c.name, m.ratio, m.ratio/rs[0].best().ratio, m.usec, m.floorUsec, m.perSec, r.allRounds())
			}
		}
		b.WriteString("\n")
	}
}

// startedText is when the run began, as BENCHMARKS.md writes it.
func (rep report) startedText() string {
	return rep.started.UTC().Format("2006-01-02 15:04 MST")
}

func (rep report) clientSection(b *strings.Builder) {
	b.WriteString("## Client cost\n\nMeasured on " + rep.startedText() + ": `testing.Benchmark` run by `make bench` (in this process, pinned to CPU 1) on a rueidis mock client whose `Do`/`DoMulti` answer a canned allowed 5-integer reply without a network, limiters with the default Options (the server's clock): building the key and arguments and the EVALSHA command, and decoding the reply. Fastest of the rounds.\n\n")
	b.WriteString("| benchmark | ns/op | B/op | allocs/op | ns per key |\n|---|---:|---:|---:|---:|\n")
	for _, f := range rep.client {
		perKey := ""
		if f.perKey {
			perKey = fmt.Sprintf("%.0f", f.nsOp/100)
		}
		fmt.Fprintf(b, "| %s | %.0f | %d | %d | %s |\n", f.name, f.nsOp, f.bytes, f.allocs, perKey)
	}
	r := rueidislimiterAllow
	fmt.Fprintf(b, "| %s † | %.0f | %d | %d |  |\n\n", r.name, r.nsOp, r.bytes, r.allocs)
	fmt.Fprintf(b, "† Static figures, not re-measured by `make bench`: %s.\n\n", rueidislimiterNote)
}

func (rep report) throughputSection(b *strings.Builder) {
	b.WriteString("## Throughput\n\nDecisions per second end to end, each ratelua script with 1 limit, the main table's callers and 10,000 event keys through rueidis (auto-pipelining). Single node: the most decisions/s of the main table's rounds (while commandstats was being collected). Cluster: a six-node testbench cluster (3 masters with 1 replica each) on the same machine, every node pinned to CPU 0 like the single server, a rueidis cluster client, the same limiters; best of the rounds after a warm-up. On 2 cores the cluster's masters share one CPU, so this shows the cost of routing and replication, not the scaling a cluster gives on separate machines.\n\n")
	for _, sr := range rep.servers {
		if len(sr.throughput) == 0 {
			continue
		}
		fmt.Fprintf(b, "### %s %s\n\n", sr.kind, sr.clusterVersion)
		b.WriteString("| script | single node decisions/s | six-node cluster decisions/s | cluster rounds | cluster / single |\n|---|---:|---:|---|---:|\n")
		for _, t := range sr.throughput {
			best := 0.0
			var all []string
			for _, x := range t.cluster {
				best = max(best, x)
				all = append(all, fmt.Sprintf("%.0f", x))
			}
			single, ratio := "—", "—"
			if t.single > 0 {
				single, ratio = fmt.Sprintf("%.0f", t.single), fmt.Sprintf("%.2f", best/t.single)
			}
			fmt.Fprintf(b, "| %s | %s | %.0f | %s | %s |\n", t.name, single, best, strings.Join(all, " "), ratio)
		}
		b.WriteString("\n")
	}
}

// targets lists the targets as held or missed, per server.
func (rep report) targets() string {
	var b strings.Builder
	for _, f := range rep.client {
		if strings.Contains(f.name, "Allow,") {
			fmt.Fprintf(&b, "client: %-52s %d allocs/op, target <= rueidislimiter Allow's %d: %s\n",
				f.name, f.allocs, rueidislimiterAllow.allocs, held(f.allocs <= rueidislimiterAllow.allocs))
		}
	}
	for _, sr := range rep.servers {
		fmt.Fprintf(&b, "%s %s\n", sr.kind, sr.version)
		for _, r := range sr.results {
			if len(r.rounds) == 0 {
				continue
			}
			m := r.best()
			if r.c.group == groupMinimum {
				fmt.Fprintf(&b, "  %-62s cost %.2fx floor (minimum)\n", r.c.name, m.ratio)
			}
			if r.c.group == groupBaseline || r.c.group == groupPeer {
				fmt.Fprintf(&b, "  %-62s cost %.2fx floor (%s)\n", r.c.name, m.ratio, r.c.group)
			}
			if r.c.cost > 0 {
				fmt.Fprintf(&b, "  %-62s cost %.2fx floor, target <= %.1f: %s%s\n", r.c.name, m.ratio, r.c.cost, held(m.ratio <= r.c.cost), sr.minimumNote(r, m.ratio <= r.c.cost))
			}
			if p, ok := sr.bestPeer(r); ok && r.c.peerMax > 0 {
				x := m.ratio / p.best().ratio
				fmt.Fprintf(&b, "  %-62s cost %.2fx the best peer's (%s), target %s: %s\n", r.c.name, x, p.c.short, peerTarget(r.c), held(peerHeld(r.c, x)))
			}
			if x, ok := sr.refRatio(r); ok && r.c.refMax > 0 {
				fmt.Fprintf(&b, "  %-62s cost %.2fx the %s row's, target <= %g: %s\n", r.c.name, x, strings.TrimPrefix(r.c.ref, "ratelua "), r.c.refMax, held(x <= r.c.refMax))
			}
			if r.c.noMem || r.c.functions {
				continue
			}
			mr, _ := sr.memRatio(r)
			if r.c.mem > 0 {
				fmt.Fprintf(&b, "  %-62s memory %.2fx its memory floor (%.1f of %.1f bytes/key), target <= %.2f: %s\n", r.c.name, mr, r.mem.bytesPerKey, r.memFloor.bytesPerKey, r.c.mem, held(mr <= r.c.mem))
			}
			if ref, ok := sr.memRef(r); ok {
				fmt.Fprintf(&b, "  %-62s memory %.1f bytes/key, MEMORY USAGE %d, target <= v%d's %.1f (+2%%, the noise of used_memory) and %d: %s\n",
					r.c.name, r.mem.bytesPerKey, r.mem.usage, comparedVersion, ref.bytesPerKey, ref.usage, held(r.mem.bytesPerKey <= memNoise*ref.bytesPerKey && r.mem.usage <= ref.usage))
			}
		}
		if x, ok := sr.sweepRatio(sweepLimits, 1, 8); ok {
			fmt.Fprintf(&b, "  %-62s cost at 8 limits %.2fx at 1 limit, target <= 2: %s\n", "sweep: ratelua sliding_window (newest)", x, held(x <= 2))
		}
		if x, ok := sr.sweepRatio(sweepBuckets, 10, 10000); ok {
			fmt.Fprintf(&b, "  %-62s cost at 10,000 buckets %.2fx at 10, target <= 1.5: %s\n", "sweep: ratelua sliding_window (newest)", x, held(x <= 1.5))
		}
	}
	return b.String()
}

// minimumNote explains a missed cost target by the row's minimum: what the
// unavoidable commands of its job cost in the same run.
func (sr serverResult) minimumNote(r result, ok bool) string {
	if ok {
		return ""
	}
	m, found := sr.find(r.c.minimum)
	if !found {
		return ""
	}
	return fmt.Sprintf(" (its minimum, %s, costs %.2fx floor: the script %.2fx that)", strings.TrimPrefix(m.c.name, "minimum: "), m.best().ratio, r.best().ratio/m.best().ratio)
}

func held(ok bool) string {
	if ok {
		return "held"
	}
	return "MISSED"
}

func faster(x float64) string {
	if x < 1 {
		return "cheaper"
	}
	return "NOT cheaper"
}
