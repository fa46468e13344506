package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// sectionHotKeys: decisions per second on one hot key with and without
// Options.HotKeys, from 1 to hotMaxProcs processes (issue 32); run alone,
// it rewrites only its part of BENCHMARKS.md.
const sectionHotKeys = "hotkeys"

// hotMaxProcs is the most worker processes of the hot-key section.
const hotMaxProcs = 4

// hotWorkerEnv names the environment variable that makes this program a
// hot-key worker: its value is the worker's hotWork (JSON).
const hotWorkerEnv = "RATELUA_BENCH_HOTKEYS_WORKER"

// The hot-key section's part of BENCHMARKS.md.
const (
	hkBegin = "<!-- hotkeys: written by make bench (-sections hotkeys) -->"
	hkEnd   = "<!-- /hotkeys -->"
)

// hotBucket is the hot key's limit: a token bucket that the load never
// empties (a billion a second), so that every decision is admitted.
var hotBucket = ratelua.Bucket{Capacity: 1_000_000_000, RefillAmount: 1_000_000_000, RefillInterval: time.Second}

// hotWork is what one worker process runs.
type hotWork struct {
	Addr    string
	Key     string
	Hot     bool // Options.HotKeys (the defaults) on
	Callers int
	Warm    time.Duration
	Dur     time.Duration
}

// hotOutcome is what a worker reports on its stdout.
type hotOutcome struct {
	Measured int64   // decisions in the measured Dur
	Seconds  float64 // the measured time
	Total    int64   // every decision, the warm-up's too
}

// hotCell is one measurement: procs processes, with or without HotKeys.
type hotCell struct {
	perSec      float64 // decisions per second, summed over the processes
	callsPerDec float64 // server calls (commandstats) per decision
	usecPerDec  float64 // the server's usec of the calls per decision
}

// hotServer is the section's figures on one server: [procs-1][0 without,
// 1 with HotKeys], the best round of each.
type hotServer struct {
	kind    testbench.Kind
	version string
	cells   [hotMaxProcs][2]hotCell
}

// hotWorker runs the worker of text (hotWork) and returns its exit code.
func hotWorker(text string) int {
	if err := hotWorkerRun(text); err != nil {
		fmt.Fprintln(os.Stderr, "hotkeys worker:", err)
		return 2
	}
	return 0
}

func hotWorkerRun(text string) error {
	var w hotWork
	if err := json.Unmarshal([]byte(text), &w); err != nil {
		return fmt.Errorf("read the work: %w", err)
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{w.Addr}, DisableCache: true})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer rc.Close()
	opts := ratelua.Options{Prefix: "benchhot"}
	if w.Hot {
		opts.HotKeys = &ratelua.HotKeys{}
	}
	l, err := ratelua.NewTokenBucket(ratelua.Rueidis(rc), opts, hotBucket)
	if err != nil {
		return fmt.Errorf("limiter: %w", err)
	}
	ctx := context.Background()
	start := time.Now()
	from, until := start.Add(w.Warm), start.Add(w.Warm+w.Dur)
	var measured, total atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range w.Callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m, n int64
			defer func() { measured.Add(m); total.Add(n) }()
			for {
				now := time.Now()
				if !now.Before(until) {
					return
				}
				r, err := l.Allow(ctx, w.Key)
				if err == nil && !r.Allowed {
					err = fmt.Errorf("denied: %+v", r)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				n++
				if !now.Before(from) {
					m++
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	// A batch given back after its reservation expired (a starved
	// process) left its units spent: no matter to the figures.
	if err := l.Close(ctx); err != nil && !errors.Is(err, ratelua.ErrReservationExpired) {
		return fmt.Errorf("close: %w", err)
	}
	return json.NewEncoder(os.Stdout).Encode(hotOutcome{Measured: measured.Load(), Seconds: w.Dur.Seconds(), Total: total.Load()})
}

// runHotKeys runs the section on one server of kind, pinned to CPU 0
// like the main table's (the worker processes inherit this process's
// CPU 1).
func runHotKeys(ctx context.Context, cfg config, kind testbench.Kind) (hotServer, error) {
	hs := hotServer{kind: kind}
	node, err := testbench.StartNode(ctx, testbench.Options{Kind: kind})
	if err != nil {
		return hs, fmt.Errorf("start: %w", err)
	}
	defer node.Close()
	hs.version = node.Version
	if cfg.pin {
		if err := pinNode(ctx, node); err != nil {
			return hs, err
		}
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
	if err != nil {
		return hs, fmt.Errorf("client: %w", err)
	}
	defer rc.Close()
	for r := range cfg.rounds {
		for procs := 1; procs <= hotMaxProcs; procs++ {
			for hot := range 2 {
				c, err := hotMeasure(ctx, cfg, rc, node.Addr, procs, hot == 1, fmt.Sprintf("hot-%d-%d-%d", r, procs, hot))
				if err != nil {
					return hs, fmt.Errorf("%d processes, HotKeys %v: %w", procs, hot == 1, err)
				}
				log.Printf("%s hotkeys round %d: %d processes, HotKeys %-5v %9.0f/s  %.4f calls/decision  %.3f usec/decision",
					kind, r+1, procs, hot == 1, c.perSec, c.callsPerDec, c.usecPerDec)
				if best := &hs.cells[procs-1][hot]; c.perSec > best.perSec {
					*best = c
				}
			}
		}
	}
	return hs, nil
}

// hotMeasure runs procs workers on one key of the server at addr and
// reads the server's commandstats.
func hotMeasure(ctx context.Context, cfg config, rc rueidis.Client, addr string, procs int, hot bool, key string) (hotCell, error) {
	if err := resetStats(ctx, rc); err != nil {
		return hotCell{}, fmt.Errorf("resetstat: %w", err)
	}
	text, err := json.Marshal(hotWork{Addr: addr, Key: key, Hot: hot, Callers: cfg.callers, Warm: cfg.warm, Dur: cfg.dur})
	if err != nil {
		return hotCell{}, err
	}
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		outs[i] = &bytes.Buffer{}
		cmds[i] = exec.CommandContext(ctx, os.Args[0])
		cmds[i].Env = append(os.Environ(), hotWorkerEnv+"="+string(text))
		cmds[i].Stdout, cmds[i].Stderr = outs[i], os.Stderr
		if err := cmds[i].Start(); err != nil {
			return hotCell{}, fmt.Errorf("start a worker: %w", err)
		}
	}
	var c hotCell
	var total int64
	var werr error
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			werr = fmt.Errorf("worker %d: %w", i, err)
			continue
		}
		var o hotOutcome
		if err := json.Unmarshal(outs[i].Bytes(), &o); err != nil {
			werr = fmt.Errorf("worker %d's outcome %q: %w", i, outs[i].String(), err)
			continue
		}
		c.perSec += float64(o.Measured) / o.Seconds
		total += o.Total
	}
	if werr != nil {
		return c, werr
	}
	usec, calls, err := cmdCost(ctx, rc, append(append([]string{}, scriptCmds...), functionCmds...))
	if err != nil {
		return c, err
	}
	c.callsPerDec = float64(calls) / float64(total)
	c.usecPerDec = usec * float64(calls) / float64(total)
	return c, nil
}

// hotSection writes the section, between hkBegin and hkEnd.
func hotSection(b *strings.Builder, cfg config, servers []hotServer) {
	b.WriteString(hkBegin + "\n")
	b.WriteString("## Hot keys (one key, Options.HotKeys)\n\n")
	fmt.Fprintf(b, "Decisions per second on **one** event key (token_bucket v7, 1 limit that the load never empties, every decision admitted), "+
		"1 to %d processes of %d goroutines each calling Allow for %v after a %v warm-up, without and with `Options.HotKeys` (its defaults: "+
		"Rate %d/s, Lifetime %v, MaxBatch %d). The server is pinned to CPU 0 and the processes to CPU 1 (%s). "+
		"Calls per decision are the server's EVALSHA, EVAL and FCALL calls (`INFO commandstats` after `CONFIG RESETSTAT`, the warm-up's and Close's included) "+
		"per decision; the hot shard's CPU is their usec per decision. Best of %d round(s). The ratio is decisions per second with HotKeys over without.\n\n",
		hotMaxProcs, cfg.callers, cfg.dur, cfg.warm, ratelua.DefaultHotRate, ratelua.DefaultHotLifetime, ratelua.DefaultHotMaxBatch,
		map[bool]string{true: "pinned", false: "not pinned in this run"}[cfg.pin], cfg.rounds)
	for _, s := range servers {
		fmt.Fprintf(b, "### %s %s\n\n", s.kind, s.version)
		b.WriteString("| processes | decisions/s | calls/decision | server usec/decision | decisions/s, HotKeys | calls/decision, HotKeys | server usec/decision, HotKeys | ratio |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for p, cells := range s.cells {
			off, on := cells[0], cells[1]
			ratio := 0.0
			if off.perSec > 0 {
				ratio = on.perSec / off.perSec
			}
			fmt.Fprintf(b, "| %d | %.0f | %.3f | %.3f | %.0f | %.5f | %.5f | %.1fx |\n",
				p+1, off.perSec, off.callsPerDec, off.usecPerDec, on.perSec, on.callsPerDec, on.usecPerDec, ratio)
		}
		b.WriteString("\n")
	}
	b.WriteString(hkEnd + "\n")
}

// spliceHotKeys replaces the hot-key section of the file at path (between
// hkBegin and hkEnd) by section, or appends it when there is none.
func spliceHotKeys(path, section string) error {
	old, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return os.WriteFile(path, []byte("# Benchmarks\n\n"+section), 0o644)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	text := string(old)
	i, j := strings.Index(text, hkBegin), strings.Index(text, hkEnd)
	if i >= 0 && j > i {
		end := j + len(hkEnd)
		if end < len(text) && text[end] == '\n' {
			end++
		}
		text = text[:i] + section + text[end:]
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + section
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// hotKeysPart is the hot-key section of the file at path, "" when none.
func hotKeysPart(path string) string { return markedPart(path, hkBegin, hkEnd) }
