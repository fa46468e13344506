package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/testbench"
)

type measurement struct {
	usec      float64 // server usec per decision
	floorUsec float64 // mean of the floors around it
	ratio     float64
	perSec    float64 // decisions per second, end to end
	// steady: the floors before and after agree within floorSpread; a
	// round whose floors do not was disturbed (the machine is shared) and
	// is quoted only if no round of the contender is steady.
	steady bool
}

// floorSpread is how far apart (max/min) the two floors around a
// contender may be for its round to be quoted.
const floorSpread = 1.25

type memory struct {
	bytesPerKey float64 // used_memory growth / 10,000 event keys
	usage       int64   // MEMORY USAGE of one event key's state
}

// bench is what every measurement of one server needs.
type bench struct {
	cfg   config
	kind  testbench.Kind
	rc    rueidis.Client
	floor runner
	// floorRounds collects every floor measurement of the server.
	floorRounds *[]measurement
}

// rounds measures the contenders cfg.rounds times, F C1 F C2 F ... per
// round: each contender's ratio is its cost over the mean of the floors
// just before and just after it. results[i] gets contender i's rounds.
func (b bench) rounds(ctx context.Context, cs []contender, runners []runner, results []result) error {
	floorC := floorContender()
	floorCost := func() (measurement, error) {
		return measureCost(ctx, b.cfg, b.rc, b.floor, eventKeys, b.cfg.warm, floorC.cmds)
	}
	for r := range b.cfg.rounds {
		before, err := floorCost()
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		*b.floorRounds = append(*b.floorRounds, before)
		for i, c := range cs {
			keys, warm := c.keys, c.warm
			if keys == nil {
				keys = eventKeys
			}
			if warm == 0 {
				warm = b.cfg.warm
			}
			m, err := measureCost(ctx, b.cfg, b.rc, runners[i], keys, warm, c.cmds)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if c.calls > 1 {
				m.usec *= float64(c.calls)
			}
			after, err := floorCost()
			if err != nil {
				return fmt.Errorf("floor: %w", err)
			}
			*b.floorRounds = append(*b.floorRounds, after)
			m.floorUsec = mean(before.usec, after.usec)
			m.ratio = m.usec / m.floorUsec
			m.steady = max(before.usec, after.usec) <= floorSpread*min(before.usec, after.usec)
			results[i].rounds = append(results[i].rounds, m)
			log.Printf("%s round %d: %-58s %7.2f usec  %6.2fx floor (%.2f, %.2f)  %7.0f/s", b.kind, r+1, c.name, m.usec, m.ratio, before.usec, after.usec, m.perSec)
			before = after
		}
	}
	return nil
}

// measureCost warms up, resets the stats, drives the load and reads the
// server's cost per decision.
func measureCost(ctx context.Context, cfg config, rc rueidis.Client, r runner, keys []string, warm time.Duration, cmds []string) (measurement, error) {
	if _, err := drive(ctx, r, keys, cfg.callers, warm); err != nil {
		return measurement{}, err
	}
	if err := resetStats(ctx, rc); err != nil {
		return measurement{}, err
	}
	start := time.Now()
	n, err := drive(ctx, r, keys, cfg.callers, cfg.dur)
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
		return memory{}, fmt.Errorf("flushall: %w", err)
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
