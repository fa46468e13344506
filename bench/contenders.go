package main

import (
	"context"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

const (
	groupFloor    = "floor"
	groupRatelua  = "ratelua"
	groupPeer     = "peer"
	groupBaseline = "baseline"
	groupSweep    = "sweep"
)

// Jobs: what a limiter decides, so that a ratelua script is compared with
// the peers and baselines that do the same job ("ratio to the best peer").
const (
	jobTokenBucket1   = "token bucket, 1 limit"
	jobZSetLog100     = "exact log, max 100"
	jobSlidingWindow1 = "sliding window, 1 limit"
	jobSlidingWindow3 = "sliding window, 3 limits"
	jobFixedWindow    = "fixed window, 1 limit"
	// jobAny: ar1 has no peer doing its job; it is compared with the
	// cheapest peer or baseline of the run, whatever its job.
	jobAny = "any"
)

// scriptCmds are the commandstats lines of a scripted decision: EVALSHA,
// and EVAL for the first call after a NOSCRIPT.
var scriptCmds = []string{"evalsha", "eval"}

// functionCmds are the commandstats lines of a decision by FCALL.
var functionCmds = []string{"fcall"}

// fcallSuffix ends the name of a ratelua contender's FCALL twin: the same
// limiter with Options.Functions, measured right after it and shown in the
// FCALL column of its row.
const fcallSuffix = " [FCALL]"

// runner makes one decision for an event key and names the keys it keeps.
type runner interface {
	Decide(ctx context.Context, eventKey string) error
	StateKeys(eventKey string) []string
}

// env holds the clients of one server.
type env struct {
	rc rueidis.Client
	gr *redis.Client
}

// contender is one limiter under test.
type contender struct {
	name  string
	group string
	cmds  []string // commandstats entries that make up a decision
	// cost and mem are the targets (ratio to the floor); 0: none.
	cost, mem float64
	limit     bool // the physical limit (bare GET+SET), not a limiter
	// job names what it decides: a ratelua contender is compared with the
	// peers and baselines of the same job; "" for none.
	job string
	// short names a peer or baseline in the "best peer" column.
	short string
	make  func(e *env) (runner, error)

	// For the sweeps (zero in the main table): the keys driven (nil: the
	// 10,000 eventKeys), the warm-up (0: the -warm flag), prepare, run once
	// after make (a pre-fill), the sweep's name and x, the swept quantity.
	keys    []string
	warm    time.Duration
	prepare func(ctx context.Context, r runner) error
	sweep   string
	x       float64

	// For ratelua contenders: the script version pinned (0: the newest)
	// and whether it calls FCALL (the FCALL twin of the row named without
	// fcallSuffix).
	version   int
	functions bool
	// calls is the script calls one decision makes (0: 1): the server's
	// usec per call is multiplied by it, so that the row costs a decision.
	calls int
}

// rateluaRunner decides through the ratelua Go API.
type rateluaRunner struct{ l *ratelua.Limiter }

func (r rateluaRunner) Decide(ctx context.Context, eventKey string) error {
	_, err := r.l.Allow(ctx, eventKey)
	return err
}

func (r rateluaRunner) StateKeys(eventKey string) []string { return []string{r.l.Key(eventKey)} }

// realTime is the caller clock of every ratelua limiter.
func realTime() time.Time { return time.Now() }

func rl(name, job string, cost, mem float64, build func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error)) contender {
	return rlVersion(name, job, cost, mem, 0, build)
}

// rlVersion is rl with the script version pinned (0: the newest).
func rlVersion(name, job string, cost, mem float64, version int, build func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error)) contender {
	return contender{
		name: name, group: groupRatelua, cmds: scriptCmds, cost: cost, mem: mem, job: job, version: version,
		make: func(e *env) (runner, error) {
			l, err := build(e.rc, ratelua.Options{Prefix: "rl", Clock: realTime, Version: version})
			if err != nil {
				return nil, err
			}
			return rateluaRunner{l}, nil
		},
	}
}

// withFCALL returns cs with each contender followed by its FCALL twin: the
// same limiter with Options.Functions (the library is loaded on the twin's
// first call), the same targets and job.
func withFCALL(cs []contender, build map[string]func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error)) []contender {
	var out []contender
	for _, c := range cs {
		twin := c
		twin.name, twin.cmds, twin.functions = c.name+fcallSuffix, functionCmds, true
		b, version := build[c.name], c.version
		twin.make = func(e *env) (runner, error) {
			l, err := b(e.rc, ratelua.Options{Prefix: "rl", Clock: realTime, Version: version, Functions: true})
			if err != nil {
				return nil, err
			}
			return rateluaRunner{l}, nil
		}
		out = append(out, c, twin)
	}
	return out
}

func rateluaContenders() []contender {
	tb1 := ratelua.Bucket{Capacity: 100, RefillAmount: 100, RefillInterval: time.Minute}
	tb3 := []ratelua.Bucket{
		{Capacity: 1, RefillAmount: 1, RefillInterval: 5 * time.Second},
		{Capacity: 5, RefillAmount: 5, RefillInterval: time.Hour},
		{Capacity: 1000, RefillAmount: 1000, RefillInterval: 24 * time.Hour},
	}
	ar1 := ratelua.Decay{Max: 100, Factor: 2, Resolution: time.Minute}
	ar3 := []ratelua.Decay{
		{Max: 1, Factor: 2, Resolution: 5 * time.Second},
		{Max: 5, Factor: 2, Resolution: time.Hour},
		{Max: 1000, Factor: 2, Resolution: 24 * time.Hour},
	}
	sw1 := ratelua.Window{Max: 100, Duration: time.Minute, Resolution: time.Second} // 60 buckets
	sw3 := []ratelua.Window{
		{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute},
		{Max: 1000, Duration: 24 * time.Hour, Resolution: time.Hour},
	}
	type row struct {
		name, job string
		cost, mem float64
		version   int
		build     func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error)
	}
	tokenBucket1 := func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
		return ratelua.NewTokenBucket(ratelua.Rueidis(c), o, tb1)
	}
	tokenBucket3 := func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
		return ratelua.NewTokenBucket(ratelua.Rueidis(c), o, tb3...)
	}
	ar1One := func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
		return ratelua.NewAR1(ratelua.Rueidis(c), o, ar1)
	}
	ar1Three := func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
		return ratelua.NewAR1(ratelua.Rueidis(c), o, ar3...)
	}
	zsetLog := func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
		return ratelua.NewZSetLog(ratelua.Rueidis(c), o, ratelua.Log{Max: 100, Window: time.Minute})
	}
	window1 := func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
		return ratelua.NewSlidingWindow(ratelua.Rueidis(c), o, sw1)
	}
	window3 := func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
		return ratelua.NewSlidingWindow(ratelua.Rueidis(c), o, sw3...)
	}
	rows := []row{
		// The newest release (v5), with the targets.
		{"ratelua token_bucket, 1 limit", jobTokenBucket1, 3.5, 1.25, 0, tokenBucket1},
		{"ratelua token_bucket, 3 limits", "", 0, 0, 0, tokenBucket3},
		{"ratelua ar1, 1 limit", jobAny, 3.5, 1.25, 0, ar1One},
		{"ratelua ar1, 3 limits", jobAny, 0, 0, 0, ar1Three},
		{"ratelua zset_log, max 100", jobZSetLog100, 4.5, 2.0, 0, zsetLog},
		{"ratelua sliding_window, 1 limit (60 buckets)", jobSlidingWindow1, 4.5, 0, 0, window1},
		{"ratelua sliding_window, 3 limits", jobSlidingWindow3, 6.0, 3.0, 0, window3},
	}
	var cs []contender
	build := map[string]func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error){}
	for _, r := range rows {
		cs = append(cs, rlVersion(r.name, r.job, r.cost, r.mem, r.version, r.build))
		build[r.name] = r.build
	}
	return append(withFCALL(cs, build), concurrencyContenders()...)
}

// concurrencyRunner makes a decision an acquire and the release of its
// lease (two script calls) through the Semaphore.
type concurrencyRunner struct{ s *ratelua.Semaphore }

func (r concurrencyRunner) Decide(ctx context.Context, eventKey string) error {
	lease, _, err := r.s.Acquire(ctx, eventKey)
	if err != nil || lease == nil {
		return err
	}
	return lease.Release(ctx)
}

func (r concurrencyRunner) StateKeys(eventKey string) []string { return []string{r.s.Key(eventKey)} }

// concurrencyContenders are the concurrency script's row and its FCALL
// twin: one decision is an acquire and a release (100 slots, a lease of
// 30 s), two script calls, costed together.
func concurrencyContenders() []contender {
	row := func(functions bool) contender {
		c := contender{
			name: "ratelua concurrency, acquire + release", group: groupRatelua, cmds: scriptCmds, calls: 2, functions: functions,
			make: func(e *env) (runner, error) {
				s, err := ratelua.NewConcurrency(ratelua.Rueidis(e.rc), ratelua.Options{Prefix: "rl", Clock: realTime, Functions: functions},
					ratelua.Slots{Max: 100, Lease: 30 * time.Second})
				if err != nil {
					return nil, err
				}
				return concurrencyRunner{s}, nil
			},
		}
		if functions {
			c.name, c.cmds = c.name+fcallSuffix, functionCmds
		}
		return c
	}
	return []contender{row(false), row(true)}
}

// redisRateRunner is github.com/go-redis/redis_rate/v10 (GCRA) on a
// go-redis client: the peer needs its own client, the load is the same.
type redisRateRunner struct {
	l     *redis_rate.Limiter
	limit redis_rate.Limit
}

func (r redisRateRunner) Decide(ctx context.Context, eventKey string) error {
	_, err := r.l.Allow(ctx, eventKey, r.limit)
	return err
}

// redis_rate keys its state as "rate:" + key.
func (r redisRateRunner) StateKeys(eventKey string) []string { return []string{"rate:" + eventKey} }

// fixedWindowScript stands in for rueidislimiter's fixed window, whose
// module github.com/redis/rueidis/rueidislimiter cannot be fetched from this
// machine's module proxy. Written here from its documented behaviour, it
// sends the same commands per decision: a counter key and a key holding the
// window's end; GET the end; when absent or past, SET both with PXAT the
// end plus a second; then INCRBY the counter.
var fixedWindowScript = rueidis.NewLuaScript(`
local ends = tonumber(redis.call('GET', KEYS[2]))
local next_end, now = tonumber(ARGV[2]), tonumber(ARGV[3])
if ends == nil or ends < now then
  redis.call('SET', KEYS[1], 0, 'PXAT', next_end + 1000)
  redis.call('SET', KEYS[2], next_end, 'PXAT', next_end + 1000)
  ends = next_end
end
return { redis.call('INCRBY', KEYS[1], tonumber(ARGV[1])), ends }`)

type fixedWindowRunner struct {
	client rueidis.Client
	window time.Duration
}

func (f fixedWindowRunner) StateKeys(eventKey string) []string {
	k := "rueidislimiter:{" + eventKey + "}"
	return []string{k, k + ":ex"}
}

func (f fixedWindowRunner) Decide(ctx context.Context, eventKey string) error {
	now := time.Now()
	return fixedWindowScript.Exec(ctx, f.client, f.StateKeys(eventKey), []string{
		"1", strconv.FormatInt(now.Add(f.window).UnixMilli(), 10), strconv.FormatInt(now.UnixMilli(), 10),
	}).Error()
}

func peerContenders() []contender {
	return []contender{
		{
			name: "peer redis_rate/v10 v10.0.1 (GCRA, go-redis v9)", group: groupPeer, cmds: scriptCmds, job: jobTokenBucket1, short: "redis_rate GCRA",
			make: func(e *env) (runner, error) {
				return redisRateRunner{l: redis_rate.NewLimiter(e.gr), limit: redis_rate.Limit{Rate: 100, Burst: 100, Period: time.Minute}}, nil
			},
		},
		{
			name: "peer rueidislimiter fixed window (script re-implemented*)", group: groupPeer, cmds: scriptCmds, job: jobFixedWindow, short: "rueidislimiter fixed window",
			make: func(e *env) (runner, error) {
				return fixedWindowRunner{client: e.rc, window: time.Minute}, nil
			},
		},
	}
}

// baselineContenders are the designs of the seed documents, re-implemented
// from their text (seed002.go, seedbucket.go, seedzset.go), with the same
// limits as the ratelua contenders of the same job.
func baselineContenders() []contender {
	return []contender{
		seedBucketContender(),
		seedZSetContender(),
		seed002Contender("baseline: seed 002 design, 1 limit (60 buckets)", jobSlidingWindow1,
			seedLimit{MaxOcurrences: 100, LimitDuration: 60, DurationResolution: 1}),
		seed002Contender("baseline: seed 002 design, 3 limits", jobSlidingWindow3,
			seedLimit{MaxOcurrences: 1, LimitDuration: 5, DurationResolution: 1},
			seedLimit{MaxOcurrences: 5, LimitDuration: 3600, DurationResolution: 600},
			seedLimit{MaxOcurrences: 1000, LimitDuration: 86400, DurationResolution: 3600}),
	}
}
