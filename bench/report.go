package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ratelua/ratelua/testbench"
)

type result struct {
	c      contender
	mem    memory
	rounds []measurement
}

// best is the round with the lowest ratio to the floor (for the floor
// itself: the lowest cost).
func (r result) best() measurement {
	var b measurement
	for i, m := range r.rounds {
		if i == 0 || (m.ratio < b.ratio) || (m.ratio == 0 && m.usec < b.usec) {
			b = m
		}
	}
	return b
}

type serverResult struct {
	kind    testbench.Kind
	version string
	floor   result
	results []result
}

type report struct {
	cpu       string
	cpus      int
	goVersion string
	pinned    bool
	cfg       config
	started   time.Time
	servers   []serverResult
}

func (sr serverResult) memRatio(r result) (float64, float64) {
	return r.mem.bytesPerKey / sr.floor.mem.bytesPerKey, float64(r.mem.usage) / float64(sr.floor.mem.usage)
}

func target(t float64) string {
	if t == 0 {
		return ""
	}
	return fmt.Sprintf("<= %g", t)
}

func (rep report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (`bench/`, a separate Go module) on %s.\n\n", rep.started.UTC().Format("2006-01-02 15:04 MST"))
	pin := "server pinned to CPU 0 and the load generator to CPU 1 (`taskset -apc`)"
	if !rep.pinned {
		pin = "NOT pinned (taskset unavailable or fewer than 2 CPUs)"
	}
	fmt.Fprintf(&b, "Machine: %s, %d CPUs, %s; %s. Load: %d concurrent callers over 10,000 event keys (uniformly random), %v per measurement after %v of warm-up; best of %d rounds.\n\n",
		rep.cpu, rep.cpus, rep.goVersion, pin, rep.cfg.callers, rep.cfg.dur, rep.cfg.warm, rep.cfg.rounds)
	b.WriteString(`**Server cost** is usec per decision from ` + "`INFO commandstats`" + ` (calls and usec of EVALSHA and EVAL)
after ` + "`CONFIG RESETSTAT`" + `. The **floor** is a one-command scripted decision (INCR, PEXPIRE on first use); it is
measured just before and just after each contender, and the ratio is contender / mean(the two floors). The quoted
round is the one with the lowest ratio; its absolute figures are shown next to it. **Memory** is the growth of
` + "`used_memory`" + ` after one decision for each of 10,000 event keys on a flushed server, per key, and ` + "`MEMORY USAGE`" + `
(SAMPLES 0) of one key's state, each divided by the floor's.

`)
	for _, sr := range rep.servers {
		fb := sr.floor.best()
		fmt.Fprintf(&b, "## %s %s\n\n", sr.kind, sr.version)
		fmt.Fprintf(&b, "Floor: %.2f usec per decision at best (%d measurements), %.1f bytes per key, MEMORY USAGE %d.\n\n",
			fb.usec, len(sr.floor.rounds), sr.floor.mem.bytesPerKey, sr.floor.mem.usage)
		b.WriteString("| contender | cost / floor | target | usec/decision | floor usec | decisions/s | all rounds (ratio) | bytes/key | / floor key | MEMORY USAGE | / floor | target |\n")
		b.WriteString("|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---|\n")
		for _, r := range sr.results {
			m := r.best()
			var all []string
			for _, x := range r.rounds {
				all = append(all, fmt.Sprintf("%.2f", x.ratio))
			}
			mr, ur := sr.memRatio(r)
			fmt.Fprintf(&b, "| %s | **%.2f** | %s | %.2f | %.2f | %.0f | %s | %.1f | **%.2f** | %d | %.2f | %s |\n",
				r.c.name, m.ratio, target(r.c.cost), m.usec, m.floorUsec, m.perSec, strings.Join(all, " "),
				r.mem.bytesPerKey, mr, r.mem.usage, ur, target(r.c.mem))
		}
		b.WriteString("\n")
	}
	b.WriteString(`Limits: token_bucket 1 limit = 100 per minute (capacity 100); 3 limits = capacity 1 per 5 s, 5 per hour, 1000 per day;
ar1 1 limit = max 100, factor 2 per minute; 3 limits = max 1 / 5 s, 5 / h, 1000 / day, factor 2; zset_log = max 100 per minute;
sliding_window 1 limit = 100 per minute at 1 s (60 buckets); 3 limits = 1 per 5 s at 1 s, 5 per hour at 10 min, 1000 per day at 1 h.
Every ratelua limiter goes through the Go API (` + "`Allow`" + `, EVALSHA) with a caller Clock returning real time.
redis_rate/v10 = GCRA, 100 per minute, burst 100, on a go-redis v9 client (its own client; same callers and keys).

\* ` + "`github.com/redis/rueidis/rueidislimiter`" + ` could not be fetched (the module proxy here answers 404 for it and
github.com does not resolve), so its fixed-window script (v1.0.x source: a counter key and an ":ex" key per identifier,
GET + two SET PXAT on a new window, INCRBY) is re-implemented in ` + "`bench/contenders.go`" + ` and run the same way, 1-minute window.

`)
	b.WriteString("## Targets\n\n```\n" + rep.targets() + "```\n")
	return b.String()
}

// targets lists the targets as held or missed, per server.
func (rep report) targets() string {
	var b strings.Builder
	for _, sr := range rep.servers {
		fmt.Fprintf(&b, "%s %s\n", sr.kind, sr.version)
		for _, r := range sr.results {
			m := r.best()
			if r.c.limit {
				fmt.Fprintf(&b, "  %-58s cost %.2fx floor (the physical limit; the issue measured 2.0-2.6)\n", r.c.name, m.ratio)
			}
			if r.c.cost > 0 {
				fmt.Fprintf(&b, "  %-58s cost %.2fx floor, target <= %.1f: %s\n", r.c.name, m.ratio, r.c.cost, held(m.ratio <= r.c.cost))
			}
			if r.c.mem > 0 {
				mr, _ := sr.memRatio(r)
				fmt.Fprintf(&b, "  %-58s memory %.2fx floor key, target <= %.2f: %s\n", r.c.name, mr, r.c.mem, held(mr <= r.c.mem))
			}
		}
	}
	return b.String()
}

func held(ok bool) string {
	if ok {
		return "held"
	}
	return "MISSED"
}
