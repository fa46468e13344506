package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/testbench"
)

// The instruction counts: every contender's decisions on a server under
// callgrind (callgrind.go), in four workloads, on a clock the bench sets
// (the contenders that read the server's clock, TIME, cannot be set:
// redis_rate and the "server clock" rows). Every (row, workload) starts
// on a flushed server after one decision on a key of its own (the script
// loaded, the clients connected), so that a row's figure does not depend
// on the rows before it.

// icWorkload is a pattern of calls: keys event keys, each called prefill
// times (not counted) then calls times (counted), one after the other,
// the clock moved by prefillStep and step between calls.
type icWorkload struct {
	name        string
	keys        int
	prefill     int
	prefillStep time.Duration
	calls       int
	step        time.Duration
}

// Every count is taken around a multiple of 50 script calls: the server
// runs Lua's garbage collector after every 50th script call (a counter of
// its own, LUA_GC_CYCLE_PERIOD, shared by every script and function), so
// that a window of 50k calls holds k collections wherever it starts; they
// are taken off the count (see collectorFunc).
//
// icWorkloads are the cases that matter: a key's first decision, a few on
// one key, the denials of a key hammered past its limit (the login case
// on the 3-limit rows: 1 per 5 s, 5 per hour, 1,000 per day), and a key
// that has lived through 60 decisions two a second (a little faster than
// the 1-limit rows' 100 per minute, so that a bucket's state is not
// full, and so not at its end, between two calls: the state's TTL, in
// real time on the server, outlasts the run by far).
var icWorkloads = []icWorkload{
	{name: "fresh keys", keys: 100, calls: 1, step: time.Millisecond},
	{name: "4 calls per key", keys: 25, calls: 4, step: time.Millisecond},
	{name: "denied (hammered)", keys: 3, prefill: 100, prefillStep: time.Millisecond, calls: 50, step: time.Millisecond},
	{name: "long-lived keys", keys: 3, prefill: 60, prefillStep: 500 * time.Millisecond, calls: 50, step: 500 * time.Millisecond},
}

// icBase is the bench clock's first instant.
var icBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// icResult is one row's instructions per decision (one Decide: for the
// concurrency rows an acquire and a release), per workload.
type icResult struct {
	c       contender
	perCall []float64 // by icWorkloads index
}

// icServer is the instruction counts of one server.
type icServer struct {
	kind    testbench.Kind
	version string
	floor   icResult
	results []icResult
}

// icContenders are the rows counted: the main table's, but the hot-key
// rows (sweeps of their own keys).
func icContenders(cs []contender) []contender {
	var out []contender
	for _, c := range cs {
		if c.keys == nil {
			out = append(out, c)
		}
	}
	return out
}

// icSession is a server under callgrind with the contenders' clients.
type icSession struct {
	s    *cgServer
	e    *env
	at   time.Time // the bench clock
	kind testbench.Kind
	// steps adds up the collector's cycles (lua_gc) taken off the counts.
	steps int64
}

// startIC starts a server of kind under callgrind and its clients. The
// rueidis client sends no background PING (Dialer.KeepAlive -1): every
// command counted is a contender's.
func startIC(ctx context.Context, kind testbench.Kind) (*icSession, error) {
	s, err := startCallgrind(ctx, kind)
	if err != nil {
		return nil, err
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{s.node.Addr}, DisableCache: true,
		Dialer: net.Dialer{KeepAlive: -1}, ConnWriteTimeout: time.Minute,
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("client: %w", err)
	}
	gr := redis.NewClient(&redis.Options{Addr: s.node.Addr, PoolSize: 1, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	ic := &icSession{s: s, kind: kind, at: icBase}
	ic.e = &env{rc: rc, gr: gr, clock: func() time.Time { return ic.at }}
	return ic, nil
}

// Close closes the clients and stops the server.
func (ic *icSession) Close() error {
	ic.e.rc.Close()
	ic.e.gr.Close()
	return ic.s.Close()
}

// reset flushes the server and makes one decision on a key of its own at
// the first instant.
func (ic *icSession) reset(ctx context.Context, r runner) error {
	if _, err := ic.s.node.Do(ctx, "FLUSHALL", "SYNC"); err != nil {
		return fmt.Errorf("flushall: %w", err)
	}
	ic.at = icBase
	return r.Decide(ctx, "ic-warm")
}

// icKey is the i-th event key of workload w.
func icKey(w, i int) string { return fmt.Sprintf("ic%d:%03d", w, i) }

// perCall is r's instructions per decision in workload w, the collector
// apart (see quietCollector): on a reset server, each key's prefill (not
// counted) then its counted calls, the count taken around the counted
// calls of each key when there is a prefill, around all of them when
// there is none.
func (ic *icSession) perCall(ctx context.Context, r runner, w int) (float64, error) {
	if err := ic.reset(ctx, r); err != nil {
		return 0, err
	}
	wl := icWorkloads[w]
	calls := func(key string, n int, step time.Duration) error {
		for range n {
			if err := r.Decide(ctx, key); err != nil {
				return err
			}
			ic.at = ic.at.Add(step)
		}
		return nil
	}
	var total int64
	add := func(c cgCount) {
		total += c.total - c.collector
		ic.steps += c.steps
	}
	if wl.prefill == 0 {
		c, err := ic.s.measure(ctx, func() error {
			for i := range wl.keys {
				ic.at = icBase
				if err := calls(icKey(w, i), wl.calls, wl.step); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		add(c)
	}
	for i := range wl.keys {
		if wl.prefill == 0 {
			break
		}
		key := icKey(w, i)
		ic.at = icBase
		if err := calls(key, wl.prefill, wl.prefillStep); err != nil {
			return 0, err
		}
		c, err := ic.s.measure(ctx, func() error { return calls(key, wl.calls, wl.step) })
		if err != nil {
			return 0, err
		}
		add(c)
	}
	return float64(total) / float64(wl.keys*wl.calls), nil
}

// measureRow counts contender c in every workload of ws (indexes of
// icWorkloads).
func (ic *icSession) measureRow(ctx context.Context, c contender, ws []int) (icResult, error) {
	r, err := c.make(ic.e)
	if err != nil {
		return icResult{}, fmt.Errorf("%s: %w", c.name, err)
	}
	res := icResult{c: c, perCall: make([]float64, len(icWorkloads))}
	for _, w := range ws {
		n, err := ic.perCall(ctx, r, w)
		if err != nil {
			return icResult{}, fmt.Errorf("%s, %s: %w", c.name, icWorkloads[w].name, err)
		}
		res.perCall[w] = n
	}
	return res, nil
}

// allWorkloads are the indexes of every workload.
func allWorkloads() []int {
	ws := make([]int, len(icWorkloads))
	for i := range ws {
		ws[i] = i
	}
	return ws
}

// runInstructions counts the floor and every contender of cs on a server
// of kind under callgrind.
func runInstructions(ctx context.Context, kind testbench.Kind, cs []contender) (icServer, error) {
	ic, err := startIC(ctx, kind)
	if err != nil {
		return icServer{}, err
	}
	defer ic.Close()
	out := icServer{kind: kind, version: ic.s.node.Version}
	start := time.Now()
	if out.floor, err = ic.measureRow(ctx, floorContender(), allWorkloads()); err != nil {
		return out, err
	}
	for _, c := range cs {
		res, err := ic.measureRow(ctx, c, allWorkloads())
		if err != nil {
			return out, err
		}
		log.Printf("%s instructions: %-58s %s", kind, c.name, res.cells(out.floor))
		out.results = append(out.results, res)
	}
	if ic.steps == 0 {
		return out, fmt.Errorf("%s: no call to %s in any count: the collector's periodic cycle was not found to take it off (another server version?)", kind, collectorFunc)
	}
	log.Printf("%s %s: instructions of %d rows in %v (%d collector cycles taken off)", kind, out.version, len(cs)+1,
		time.Since(start).Round(time.Second), ic.steps)
	return out, nil
}

// cells formats a row's figures for the log: thousands of instructions
// and the ratio to the floor, per workload.
func (r icResult) cells(floor icResult) string {
	s := ""
	for w := range icWorkloads {
		s += fmt.Sprintf("  %6.1fk %5.2fx", r.perCall[w]/1000, r.perCall[w]/floor.perCall[w])
	}
	return s
}
