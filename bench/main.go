// Command bench measures ratelua against the floor, its peers and the seed
// documents' designs on local Redis and Valkey servers started by
// testbench, and writes BENCHMARKS.md and the charts.
//
//	go run . -out ..                                  # everything (make bench)
//	go run . -out .. -sections main -rounds 2         # issue 24's targets
//	go run . -sections main -only 'token_bucket|GCRA' -dur 1s -rounds 1
//
// The server is pinned to CPU 0 and this process to CPU 1 (taskset). For
// each contender the server's cost per decision is usec per call from
// INFO commandstats after CONFIG RESETSTAT; the floor (INCR, PEXPIRE on
// first use, in a script) is measured just before and just after each
// contender and the ratio is contender / mean(floors); the best of the
// rounds is quoted.
//
// The main table runs every ratelua script on the newest version (the Go
// API's default) and again pinned to v5, the peers, the seeds' designs and,
// per job, a minimum (only the commands the job cannot avoid); each row's
// bytes per key are divided by those of a counter under keys of the same
// lengths as the row's state keys, measured in the same run.
//
// Sections (-sections): instructions (every main-table contender's
// instructions per decision inside the server's call() under callgrind, in
// four workloads: the deciding figure, which BENCHMARKS.md leads with; run
// alone it rewrites only that part of BENCHMARKS.md), main (cost and
// memory of every contender), sweep
// (scaling of sliding_window and zset_log), client (ns/op and allocs/op on
// a canned reply), cluster (decisions/s on a six-node cluster), hotkeys
// (decisions/s on one hot key, with and without Options.HotKeys, from 1 to
// 4 worker processes: this program run again; run alone it rewrites only
// its part of BENCHMARKS.md).
//
// The charts are drawn with gonum.org/v1/plot, a dependency of this bench
// module only (never of ratelua's go.mod): it renders PNG line and bar
// charts in pure Go, so make bench needs no plotting tool on the machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/testbench"
)

// Sections of a run.
const (
	sectionMain    = "main"
	sectionSweep   = "sweep"
	sectionClient  = "client"
	sectionCluster = "cluster"
	// sectionInstructions: instructions per decision under callgrind
	// (instructions.go); run alone, it rewrites only its part of
	// BENCHMARKS.md.
	sectionInstructions = "instructions"
)

var allSections = []string{sectionInstructions, sectionMain, sectionSweep, sectionClient, sectionCluster, sectionHotKeys}

type config struct {
	out      string
	charts   string
	kinds    []testbench.Kind
	callers  int
	dur      time.Duration
	warm     time.Duration
	rounds   int
	pin      bool
	only     *regexp.Regexp
	sections []string
}

func (c config) has(section string) bool { return slices.Contains(c.sections, section) }

func main() {
	if work := os.Getenv(hotWorkerEnv); work != "" {
		os.Exit(hotWorker(work))
	}
	var cfg config
	kinds := flag.String("servers", "redis,valkey", "servers to run, in order")
	only := flag.String("only", "", "run only the contenders (and client benchmarks) whose name matches this regexp; the floor always runs")
	sections := flag.String("sections", strings.Join(allSections, ","), "sections to run: "+strings.Join(allSections, ","))
	flag.StringVar(&cfg.out, "out", ".", "directory for BENCHMARKS.md")
	flag.StringVar(&cfg.charts, "charts", "charts", "directory for the PNG charts (linked from BENCHMARKS.md by a relative path)")
	flag.IntVar(&cfg.callers, "callers", 16, "concurrent callers")
	flag.DurationVar(&cfg.dur, "dur", 2*time.Second, "load per measurement")
	flag.DurationVar(&cfg.warm, "warm", 300*time.Millisecond, "warm-up before each measurement (the sweeps warm up for their window)")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds; the best is quoted")
	flag.BoolVar(&cfg.pin, "pin", true, "pin the server to CPU 0 and the load to CPU 1")
	flag.Parse()
	log.SetFlags(log.Ltime)
	for _, k := range strings.Split(*kinds, ",") {
		cfg.kinds = append(cfg.kinds, testbench.Kind(strings.TrimSpace(k)))
	}
	for _, s := range strings.Split(*sections, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allSections, s) {
			log.Fatalf("-sections: unknown section %q (want %s)", s, strings.Join(allSections, ","))
		}
		cfg.sections = append(cfg.sections, s)
	}
	var err error
	if cfg.only, err = regexp.Compile(*only); err != nil {
		log.Fatalf("-only: %v", err)
	}
	if err := run(context.Background(), cfg); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, cfg config) error {
	rep := report{cpu: cpuModel(), cpus: runtime.NumCPU(), goVersion: runtime.Version(), started: time.Now()}
	if cfg.pin && runtime.NumCPU() >= 2 {
		if err := pin(os.Getpid(), 1); err != nil {
			log.Printf("not pinned: %v", err)
			cfg.pin = false
		}
	} else {
		cfg.pin = false
	}
	rep.pinned, rep.cfg = cfg.pin, cfg
	if cfg.has(sectionInstructions) {
		cs := icContenders(filter(cfg.only, mainContenders()))
		for _, kind := range cfg.kinds {
			s, err := runInstructions(ctx, kind, cs)
			if err != nil {
				return fmt.Errorf("%s instructions: %w", kind, err)
			}
			rep.instructions = append(rep.instructions, s)
		}
		if len(cfg.sections) == 1 {
			var b strings.Builder
			rep.instructionSection(&b)
			path := filepath.Join(cfg.out, "BENCHMARKS.md")
			if err := spliceInstructions(path, b.String()); err != nil {
				return err
			}
			fmt.Print(b.String())
			log.Printf("wrote the instruction section of %s in %v", path, time.Since(rep.started).Round(time.Second))
			return nil
		}
	}
	var hot []hotServer
	if cfg.has(sectionHotKeys) {
		for _, kind := range cfg.kinds {
			hs, err := runHotKeys(ctx, cfg, kind)
			if err != nil {
				return fmt.Errorf("%s hotkeys: %w", kind, err)
			}
			hot = append(hot, hs)
		}
	}
	path := filepath.Join(cfg.out, "BENCHMARKS.md")
	hotPart := hotKeysPart(path)
	// The instruction section this run counted goes into markdown();
	// otherwise the file's own is kept, as the hot-key section is.
	var icPart string
	if len(rep.instructions) == 0 {
		icPart = markedPart(path, icBegin, icEnd)
	}
	rep.kept = keptParts(path, cfg)
	if len(hot) > 0 {
		var b strings.Builder
		hotSection(&b, cfg, hot)
		hotPart = b.String()
		if len(cfg.sections) == 1 {
			if err := spliceHotKeys(path, hotPart); err != nil {
				return err
			}
			fmt.Print(hotPart)
			log.Printf("wrote the hot-key section of %s in %v", path, time.Since(rep.started).Round(time.Second))
			return nil
		}
	}
	if cfg.has(sectionClient) {
		figs, err := runClient(ctx, cfg.rounds, cfg.only)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		rep.client = figs
	}
	for _, kind := range cfg.kinds {
		if !cfg.has(sectionMain) && !cfg.has(sectionSweep) && !cfg.has(sectionCluster) {
			break
		}
		sr := serverResult{kind: kind}
		if cfg.has(sectionMain) || cfg.has(sectionSweep) {
			var err error
			if sr, err = runServer(ctx, cfg, kind); err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
		}
		if cfg.has(sectionCluster) {
			var err error
			var cs []contender
			for _, c := range filter(cfg.only, rateluaContenders()) {
				if oneLimit(c) {
					cs = append(cs, c)
				}
			}
			if sr.throughput, sr.clusterVersion, err = runCluster(ctx, cfg, kind, cs); err != nil {
				return fmt.Errorf("%s cluster: %w", kind, err)
			}
			if sr.version == "" {
				sr.version = sr.clusterVersion
			}
			for i := range sr.throughput {
				for _, r := range sr.results {
					if r.c.name == sr.throughput[i].name {
						sr.throughput[i].single = r.maxPerSec()
					}
				}
			}
		}
		rep.servers = append(rep.servers, sr)
	}
	if err := os.MkdirAll(cfg.charts, 0o755); err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	charts, err := rep.drawCharts(cfg.charts)
	if err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	rep.charts = charts
	md, err := rep.markdown()
	if err != nil {
		return err
	}
	if err := writeReport(path, md, icPart, hotPart); err != nil {
		return err
	}
	if len(rep.instructions) > 0 {
		var b strings.Builder
		rep.instructionSection(&b)
		fmt.Print(b.String())
	}
	fmt.Print(rep.targets())
	log.Printf("wrote %s in %v", path, time.Since(rep.started).Round(time.Second))
	return nil
}

// filter keeps the contenders whose name matches only.
func filter(only *regexp.Regexp, cs []contender) []contender {
	var out []contender
	for _, c := range cs {
		if only.MatchString(c.name) {
			out = append(out, c)
		}
	}
	return out
}

// mainContenders are the main table's rows, in order.
func mainContenders() []contender {
	cs := append(minimumContenders(), rateluaContenders()...)
	cs = append(cs, peerContenders()...)
	return append(cs, baselineContenders()...)
}

// runServer starts one server, pins it and runs the main and sweep sections.
func runServer(ctx context.Context, cfg config, kind testbench.Kind) (serverResult, error) {
	node, err := testbench.StartNode(ctx, testbench.Options{Kind: kind})
	if err != nil {
		return serverResult{}, fmt.Errorf("start: %w", err)
	}
	defer node.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
	if err != nil {
		return serverResult{}, fmt.Errorf("client: %w", err)
	}
	defer rc.Close()
	gr := redis.NewClient(&redis.Options{Addr: node.Addr, PoolSize: cfg.callers})
	defer gr.Close()
	e := &env{rc: rc, gr: gr}

	sr := serverResult{kind: kind, version: node.Version}
	if cfg.pin {
		if err := pinNode(ctx, node); err != nil {
			return sr, err
		}
	}
	log.Printf("%s %s at %s", kind, node.Version, node.Addr)

	floorC := floorContender()
	floor, err := floorC.make(e)
	if err != nil {
		return sr, err
	}
	var floorRounds []measurement
	b := bench{cfg: cfg, kind: kind, rc: rc, floor: floor, floorRounds: &floorRounds}

	if cfg.has(sectionMain) {
		contenders := filter(cfg.only, mainContenders())
		runners, err := makeRunners(e, contenders)
		if err != nil {
			return sr, err
		}
		// Memory first, on an empty server per contender.
		floorMem, err := measureMemory(ctx, rc, floor, memCallers)
		if err != nil {
			return sr, fmt.Errorf("floor memory: %w", err)
		}
		sr.floor = result{c: floorC, mem: floorMem}
		sr.results = make([]result, len(contenders))
		// Each row's memory floor: a counter per state key under a key of
		// the same length, measured once per distinct set of lengths.
		floors := map[string]memory{}
		for i, c := range contenders {
			sr.results[i] = result{c: c}
			if c.noMem || c.functions {
				continue // not measured, or the same state as its EVALSHA row
			}
			m, err := measureMemory(ctx, rc, runners[i], memCallers)
			if err != nil {
				return sr, fmt.Errorf("%s memory: %w", c.name, err)
			}
			pads := statePads(runners[i], eventKeys[0])
			id := fmt.Sprint(pads)
			f, ok := floors[id]
			if !ok {
				if f, err = measureMemory(ctx, rc, memFloorRunner{client: rc, pads: pads}, memCallers); err != nil {
					return sr, fmt.Errorf("%s memory floor: %w", c.name, err)
				}
				floors[id] = f
			}
			sr.results[i].mem, sr.results[i].memFloor = m, f
		}
		if err := rc.Do(ctx, rc.B().Flushall().Build()).Error(); err != nil {
			return sr, fmt.Errorf("flushall: %w", err)
		}
		if err := b.rounds(ctx, contenders, runners, sr.results); err != nil {
			return sr, err
		}
	} else {
		sr.floor = result{c: floorC}
	}

	if cfg.has(sectionSweep) {
		sweeps := filter(cfg.only, sweepContenders())
		runners, err := makeRunners(e, sweeps)
		if err != nil {
			return sr, err
		}
		if err := rc.Do(ctx, rc.B().Flushall().Build()).Error(); err != nil {
			return sr, fmt.Errorf("flushall: %w", err)
		}
		sr.sweeps = make([]result, len(sweeps))
		for i, c := range sweeps {
			sr.sweeps[i].c = c
			if c.prepare != nil {
				start := time.Now()
				if err := c.prepare(ctx, runners[i]); err != nil {
					return sr, fmt.Errorf("%s: %w", c.name, err)
				}
				log.Printf("%s: %s prepared in %v", kind, c.name, time.Since(start).Round(time.Millisecond))
			}
		}
		if err := b.rounds(ctx, sweeps, runners, sr.sweeps); err != nil {
			return sr, err
		}
	}
	sr.floor.rounds = floorRounds
	return sr, rc.Do(ctx, rc.B().Flushall().Build()).Error()
}

// makeRunners makes every contender's runner.
func makeRunners(e *env, cs []contender) ([]runner, error) {
	runners := make([]runner, len(cs))
	for i, c := range cs {
		var err error
		if runners[i], err = c.make(e); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return runners, nil
}
