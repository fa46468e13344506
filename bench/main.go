// Command bench measures ratelua against the floor and its peers on local
// Redis and Valkey servers started by testbench, and writes BENCHMARKS.md.
//
//	go run . -out ..
//
// The server is pinned to CPU 0 and this process to CPU 1 (taskset). For
// each contender the server's cost per decision is usec per call from
// INFO commandstats after CONFIG RESETSTAT; the floor (INCR, PEXPIRE on
// first use, in a script) is measured just before and just after each
// contender and the ratio is contender / mean(floors); the best of the
// rounds is quoted.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/testbench"
)

type config struct {
	out     string
	kinds   []testbench.Kind
	callers int
	dur     time.Duration
	warm    time.Duration
	rounds  int
	pin     bool
}

func main() {
	var cfg config
	kinds := flag.String("servers", "redis,valkey", "servers to run, in order")
	flag.StringVar(&cfg.out, "out", ".", "directory for BENCHMARKS.md")
	flag.IntVar(&cfg.callers, "callers", 16, "concurrent callers")
	flag.DurationVar(&cfg.dur, "dur", 2*time.Second, "load per measurement")
	flag.DurationVar(&cfg.warm, "warm", 300*time.Millisecond, "warm-up before each measurement")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds; the best is quoted")
	flag.BoolVar(&cfg.pin, "pin", true, "pin the server to CPU 0 and the load to CPU 1")
	flag.Parse()
	for _, k := range strings.Split(*kinds, ",") {
		cfg.kinds = append(cfg.kinds, testbench.Kind(strings.TrimSpace(k)))
	}
	log.SetFlags(log.Ltime)
	ctx := context.Background()
	rep := report{cpu: cpuModel(), cpus: runtime.NumCPU(), goVersion: runtime.Version(), cfg: cfg, started: time.Now()}
	if cfg.pin && runtime.NumCPU() >= 2 {
		if err := pin(os.Getpid(), 1); err != nil {
			log.Printf("not pinned: %v", err)
			cfg.pin = false
		}
	} else {
		cfg.pin = false
	}
	rep.pinned = cfg.pin
	for _, kind := range cfg.kinds {
		sr, err := runServer(ctx, cfg, kind)
		if err != nil {
			log.Fatalf("%s: %v", kind, err)
		}
		rep.servers = append(rep.servers, sr)
	}
	md := rep.markdown()
	path := filepath.Join(cfg.out, "BENCHMARKS.md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Print(rep.targets())
	log.Printf("wrote %s", path)
}

// runServer starts one server, pins it and measures every contender.
func runServer(ctx context.Context, cfg config, kind testbench.Kind) (serverResult, error) {
	node, err := testbench.StartNode(ctx, testbench.Options{Kind: kind})
	if err != nil {
		return serverResult{}, err
	}
	defer node.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
	if err != nil {
		return serverResult{}, err
	}
	defer rc.Close()
	gr := redis.NewClient(&redis.Options{Addr: node.Addr, PoolSize: cfg.callers})
	defer gr.Close()
	e := &env{rc: rc, gr: gr}

	sr := serverResult{kind: kind, version: node.Version}
	if cfg.pin {
		f, err := info(ctx, rc, "server")
		if err != nil {
			return sr, err
		}
		pid, _ := strconv.Atoi(f["process_id"])
		if err := pin(pid, 0); err != nil {
			return sr, err
		}
	}
	log.Printf("%s %s at %s", kind, node.Version, node.Addr)

	floorC := floorContender()
	floor, err := floorC.make(e)
	if err != nil {
		return sr, err
	}
	contenders := append([]contender{getSetContender()}, rateluaContenders()...)
	contenders = append(contenders, peerContenders()...)
	runners := make([]runner, len(contenders))
	for i, c := range contenders {
		if runners[i], err = c.make(e); err != nil {
			return sr, fmt.Errorf("%s: %w", c.name, err)
		}
	}

	// Memory first, on an empty server per contender.
	floorMem, err := measureMemory(ctx, rc, floor, cfg.callers)
	if err != nil {
		return sr, fmt.Errorf("floor memory: %w", err)
	}
	sr.floor = result{c: floorC, mem: floorMem}
	sr.results = make([]result, len(contenders))
	for i, c := range contenders {
		m, err := measureMemory(ctx, rc, runners[i], cfg.callers)
		if err != nil {
			return sr, fmt.Errorf("%s memory: %w", c.name, err)
		}
		sr.results[i] = result{c: c, mem: m}
	}
	if err := rc.Do(ctx, rc.B().Flushall().Build()).Error(); err != nil {
		return sr, err
	}

	// Cost: F C1 F C2 F ... per round.
	floorCost := func() (measurement, error) { return measureCost(ctx, cfg, rc, floor, floorC.cmds) }
	for r := range cfg.rounds {
		before, err := floorCost()
		if err != nil {
			return sr, fmt.Errorf("floor: %w", err)
		}
		sr.floor.rounds = append(sr.floor.rounds, before)
		for i, c := range contenders {
			m, err := measureCost(ctx, cfg, rc, runners[i], c.cmds)
			if err != nil {
				return sr, fmt.Errorf("%s: %w", c.name, err)
			}
			after, err := floorCost()
			if err != nil {
				return sr, fmt.Errorf("floor: %w", err)
			}
			sr.floor.rounds = append(sr.floor.rounds, after)
			m.floorUsec = mean(before.usec, after.usec)
			m.ratio = m.usec / m.floorUsec
			sr.results[i].rounds = append(sr.results[i].rounds, m)
			log.Printf("%s round %d: %-58s %6.2f usec  %5.2fx floor (%.2f)  %7.0f/s", kind, r+1, c.name, m.usec, m.ratio, m.floorUsec, m.perSec)
			before = after
		}
	}
	return sr, nil
}

type measurement struct {
	usec      float64 // server usec per decision
	floorUsec float64 // mean of the floors around it
	ratio     float64
	perSec    float64 // decisions per second, end to end
}

type memory struct {
	bytesPerKey float64 // used_memory growth / 10,000 event keys
	usage       int64   // MEMORY USAGE of one event key's state
}

// measureCost warms up, resets the stats, drives the load and reads the
// server's cost per decision.
func measureCost(ctx context.Context, cfg config, rc rueidis.Client, r runner, cmds []string) (measurement, error) {
	if _, err := drive(ctx, r, cfg.callers, cfg.warm); err != nil {
		return measurement{}, err
	}
	if err := resetStats(ctx, rc); err != nil {
		return measurement{}, err
	}
	start := time.Now()
	n, err := drive(ctx, r, cfg.callers, cfg.dur)
	if err != nil {
		return measurement{}, err
	}
	elapsed := time.Since(start)
	usec, _, err := cmdCost(ctx, rc, cmds)
	if err != nil {
		return measurement{}, err
	}
	return measurement{usec: usec, perSec: float64(n) / elapsed.Seconds()}, nil
}

// measureMemory flushes the server, decides every event key once and
// reports the growth of used_memory per key and MEMORY USAGE of one key.
func measureMemory(ctx context.Context, rc rueidis.Client, r runner, callers int) (memory, error) {
	if err := rc.Do(ctx, rc.B().Flushall().Sync().Build()).Error(); err != nil {
		return memory{}, err
	}
	// Load the script first so that its cache entry is not counted.
	if err := r.Decide(ctx, "warm-up"); err != nil {
		return memory{}, err
	}
	before, err := usedMemory(ctx, rc)
	if err != nil {
		return memory{}, err
	}
	if err := once(ctx, r, callers); err != nil {
		return memory{}, err
	}
	after, err := usedMemory(ctx, rc)
	if err != nil {
		return memory{}, err
	}
	usage, err := memoryUsage(ctx, rc, r.StateKeys(eventKeys[0]))
	if err != nil {
		return memory{}, err
	}
	return memory{bytesPerKey: float64(after-before) / float64(len(eventKeys)), usage: usage}, nil
}
