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
	live        float64 // event keys whose state was there at the reading
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

// memCallers decide the 10,000 event keys of the memory phase: more than
// the load's callers, so that rueidis pipelines deeper and the phase ends
// well within the shortest state's life (0.6 s, see measureMemory).
const memCallers = 256

// measureMemory flushes the server, decides every event key once and
// reports the growth of used_memory per live event key and MEMORY USAGE
// of one key's state.
//
// Three things would make it vary from one measurement of the same state
// to the next. The server grows its key tables incrementally: 10,000 keys
// take a table from 8,192 slots to 16,384, and while the move is under way
// both are allocated (64 KB, 6.4 bytes per key more). Every lookup moves a
// slot, so an EXISTS of every state key, pipelined right after the writes,
// finishes the move of both tables (keys and expiry times). The clients'
// buffers (mem_clients_normal, taken off used_memory) are accounted by the
// server's timer, late: hz is raised to 100 for the phase and each reading
// waits 50 ms (5 ticks). And the shortest states may expire during the
// phase (a token bucket's state lives until the bucket is full again: 0.6
// s after one decision at 100 per minute), on a loaded machine: the growth
// is divided by the event keys still there (DBSIZE's growth over the keys
// one event key keeps), and a phase that lost more than 1% of them is run
// again (3 tries; the one that kept the most is reported).
func measureMemory(ctx context.Context, rc rueidis.Client, r runner, callers int) (memory, error) {
	restore, err := raiseHz(ctx, rc, "100")
	if err != nil {
		return memory{}, err
	}
	defer restore()
	var best memory
	for range 3 {
		m, err := measureMemoryOnce(ctx, rc, r, callers)
		if err != nil {
			return memory{}, err
		}
		if m.live > best.live {
			best = m
		}
		if m.live >= 0.99*float64(len(eventKeys)) {
			break
		}
	}
	return best, nil
}

// settle waits 50 ms for the server's timer (see measureMemory).
func settle(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}

func measureMemoryOnce(ctx context.Context, rc rueidis.Client, r runner, callers int) (memory, error) {
	if err := rc.Do(ctx, rc.B().Flushall().Sync().Build()).Error(); err != nil {
		return memory{}, fmt.Errorf("flushall: %w", err)
	}
	// Load the script first so that its cache entry is not counted.
	if err := r.Decide(ctx, "warm-up"); err != nil {
		return memory{}, err
	}
	if err := settle(ctx); err != nil {
		return memory{}, err
	}
	before, keysBefore, err := memoryAndKeys(ctx, rc)
	if err != nil {
		return memory{}, err
	}
	if err := once(ctx, r, callers); err != nil {
		return memory{}, err
	}
	if err := finishRehash(ctx, rc, r); err != nil {
		return memory{}, err
	}
	if err := settle(ctx); err != nil {
		return memory{}, err
	}
	after, keysAfter, err := memoryAndKeys(ctx, rc)
	if err != nil {
		return memory{}, err
	}
	usage, err := memoryUsage(ctx, rc, r.StateKeys(eventKeys[0]))
	if err != nil {
		return memory{}, err
	}
	live := float64(len(eventKeys))
	if per := len(r.StateKeys(eventKeys[0])); per > 0 {
		if n := float64(keysAfter-keysBefore) / float64(per); n > 0 && n < live {
			live = n
		}
	}
	return memory{bytesPerKey: float64(after-before) / live, usage: usage, live: live}, nil
}

// raiseHz sets hz and returns the function that sets it back.
func raiseHz(ctx context.Context, rc rueidis.Client, hz string) (func(), error) {
	cfg, err := rc.Do(ctx, rc.B().ConfigGet().Parameter("hz").Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("config get hz: %w", err)
	}
	old, ok := cfg["hz"]
	if !ok {
		return nil, fmt.Errorf("config get hz: no hz in %v", cfg)
	}
	if err := rc.Do(ctx, rc.B().ConfigSet().ParameterValue().ParameterValue("hz", hz).Build()).Error(); err != nil {
		return nil, fmt.Errorf("config set hz: %w", err)
	}
	return func() {
		if err := rc.Do(context.WithoutCancel(ctx), rc.B().ConfigSet().ParameterValue().ParameterValue("hz", old).Build()).Error(); err != nil {
			log.Printf("config set hz %s: %v", old, err)
		}
	}, nil
}

// memoryAndKeys is usedMemory and DBSIZE, read in one pipeline.
func memoryAndKeys(ctx context.Context, rc rueidis.Client) (int64, int64, error) {
	res := rc.DoMulti(ctx, rc.B().Info().Section("memory").Build(), rc.B().Dbsize().Build())
	text, err := res[0].ToString()
	if err != nil {
		return 0, 0, fmt.Errorf("info memory: %w", err)
	}
	m, err := usedMemoryOf(parseInfo(text))
	if err != nil {
		return 0, 0, err
	}
	n, err := res[1].AsInt64()
	if err != nil {
		return 0, 0, fmt.Errorf("dbsize: %w", err)
	}
	return m, n, nil
}

// finishRehash sends EXISTS for every state key of the 10,000 event keys,
// pipelined (see measureMemory).
func finishRehash(ctx context.Context, rc rueidis.Client, r runner) error {
	const chunk = 1000
	var cmds rueidis.Commands
	flush := func() error {
		for _, res := range rc.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				return fmt.Errorf("exists: %w", err)
			}
		}
		cmds = cmds[:0]
		return nil
	}
	for _, ek := range eventKeys {
		for _, k := range r.StateKeys(ek) {
			cmds = append(cmds, rc.B().Exists().Key(k).Build())
		}
		if len(cmds) >= chunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
