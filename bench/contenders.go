package main

import (
	"context"
	"fmt"
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
	groupMinimum  = "minimum"
	groupSweep    = "sweep"
)

// Jobs: what a limiter decides, so that a ratelua script is compared with
// the peers and baselines that do the same job ("ratio to the best peer").
const (
	jobTokenBucket1   = "token bucket, 1 limit"
	jobZSetLog100     = "exact log, max 100"
	jobSlidingWindow1 = "sliding window, 1 limit"
	jobSlidingWindow3 = "sliding window, 3 limits"
	jobSlidingWindow8 = "sliding window, 8 limits"
	jobFixedWindow    = "fixed window, 1 limit"
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

// env holds the clients of one server and the callers' clock.
type env struct {
	rc rueidis.Client
	gr *redis.Client
	// clock is the caller's clock of every contender that sends its time
	// (nil: time.Now); the instruction counts set it, so that a run sends
	// the same times on a quiet and on a busy machine.
	clock func() time.Time
}

// now is the callers' time.
func (e *env) now() time.Time {
	if e.clock != nil {
		return e.clock()
	}
	return time.Now()
}

// contender is one limiter under test.
type contender struct {
	name  string
	group string
	cmds  []string // commandstats entries that make up a decision
	// cost and mem are the targets (ratio to the floor; mem to
	// the row's memory floor, a counter under a key of the same length);
	// fcallCost is the FCALL twin's cost target; 0: none. memRef names a
	// row whose bytes per key this row's must not exceed ("" for none).
	cost, fcallCost, mem float64
	memRef               string
	// peerMax is the target of the ratio to the best peer (by EVALSHA and
	// by FCALL): at most peerMax, or below it when peerStrict; 0: none.
	peerMax    float64
	peerStrict bool
	// minimum names the row doing only the unavoidable commands of this
	// row's job (the "/ minimum" column explains a missed target).
	minimum string
	// ref names the row this one's cost is compared with (8 limits with
	// 1 limit, 10,000 buckets with 10) and refMax is the target of that
	// ratio; "" for none.
	ref    string
	refMax float64
	// noMem: the row runs on its own keys (keys below), so the memory
	// phase over the 10,000 event keys says nothing about it; not measured.
	noMem bool
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
	// serverClock: the limiter sends no time and the script reads TIME
	// (Options.Clock nil, the Go API's default).
	serverClock bool
}

// callerClock is the Options.Clock of a ratelua contender: the env's
// clock, or nil for the server's clock.
func callerClock(e *env, server bool) func() time.Time {
	if server {
		return nil
	}
	return e.now
}

// rateluaRunner decides through the ratelua Go API.
type rateluaRunner struct{ l *ratelua.Limiter }

func (r rateluaRunner) Decide(ctx context.Context, eventKey string) error {
	_, err := r.l.Allow(ctx, eventKey)
	return err
}

func (r rateluaRunner) StateKeys(eventKey string) []string { return []string{r.l.Key(eventKey)} }

type buildFunc func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error)

// rl is a ratelua contender on the newest version (the Go API's default).
func rl(name, job string, build buildFunc) contender {
	return rlVersion(name, job, 0, build)
}

// rlVersion is rl with the script version pinned (0: the newest). Each
// version has its own key prefix of the same length ("rl" for the newest,
// "r5" for v5), so that two versions sharing a state version do not share
// the state left by the other's rows.
func rlVersion(name, job string, version int, build buildFunc) contender {
	return rlClock(name, job, version, false, build)
}

// rlClock is rlVersion on the server's clock when serverClock.
func rlClock(name, job string, version int, serverClock bool, build buildFunc) contender {
	return contender{
		name: name, group: groupRatelua, cmds: scriptCmds, job: job, version: version, serverClock: serverClock,
		make: func(e *env) (runner, error) {
			l, err := build(e.rc, ratelua.Options{Prefix: versionPrefix(version), Clock: callerClock(e, serverClock), Version: version})
			if err != nil {
				return nil, err
			}
			return rateluaRunner{l}, nil
		},
	}
}

// versionPrefix is the Prefix of the limiters of a pinned version.
func versionPrefix(version int) string {
	if version == 0 {
		return "rl"
	}
	return "r" + strconv.Itoa(version%10)
}

// twin is c's FCALL twin: the same limiter with Options.Functions (the
// library is loaded on the twin's first call), the same job, the FCALL
// cost target, measured right after c.
func twin(c contender, build buildFunc) contender {
	t := c
	t.name, t.cmds, t.functions = c.name+fcallSuffix, functionCmds, true
	t.cost, t.fcallCost, t.mem, t.memRef, t.ref = c.fcallCost, 0, 0, "", ""
	version, serverClock := c.version, c.serverClock
	t.make = func(e *env) (runner, error) {
		l, err := build(e.rc, ratelua.Options{Prefix: versionPrefix(version), Clock: callerClock(e, serverClock), Version: version, Functions: true})
		if err != nil {
			return nil, err
		}
		return rateluaRunner{l}, nil
	}
	return t
}

// newestVersion is the newest embedded version of script name (the Go
// API's default), 0 if none.
func newestVersion(name string) int {
	v := 0
	for _, s := range ratelua.Scripts() {
		if s.Name == name {
			v = max(v, s.Version)
		}
	}
	return v
}

// embedded reports whether version v of script name is embedded.
func embedded(name string, v int) bool {
	for _, s := range ratelua.Scripts() {
		if s.Name == name && s.Version == v {
			return true
		}
	}
	return false
}

// comparedVersion is the released version that the newest is shown beside
// (each of its rows again, pinned by Options.Version).
const comparedVersion = 6

// Names of the rows the targets refer to (without the version).
const (
	rowTokenBucket1 = "token_bucket, 1 limit"
	rowAR1One       = "ar1, 1 limit"
	rowWindow1      = "sliding_window, 1 limit (60 buckets)"
	rowBuckets10    = "sliding_window, 10 buckets (hot keys, full window)"
	rowBuckets10000 = "sliding_window, 10,000 buckets (hot keys, full window)"
)

// Minimum rows: per job, a script doing only the commands the job cannot
// avoid (minimum.go).
const (
	minGetSet = "minimum: GET + SET PX (token bucket, ar1)"
	// minContract is minGetSet under ratelua's calling contract: seven
	// arguments, a reply of five integers.
	minContract = "minimum: GET + SET PX, 7 arguments, 5-integer reply (ratelua's contract)"
	// minChecked is minContract with the integers checked and converted
	// and a denial that writes nothing (checkedScript).
	minChecked = minContract + ", integers checked and converted"
	// minBucket is minChecked doing a token bucket's job and nothing
	// else (bucketScript).
	minBucket = minChecked + ", a token bucket's job"
	// minDecay is minChecked doing ar1's job and nothing else
	// (decayScript).
	minDecay = minChecked + ", ar1's job"
	// minBucketWhole is minBucket under the whole contract: every
	// argument, bound and state checked (bucketWholeScript).
	minBucketWhole = minBucket + ", the whole contract"
	// minDecayWhole is minDecay under the whole contract
	// (decayWholeScript).
	minDecayWhole = minDecay + ", the whole contract"
	minZSet       = "minimum: ZCOUNT + ZADD + PEXPIRE (exact log)"
	// minZSetChecked is minZSet under ratelua's contract (zset_log's
	// arguments, a 5-integer reply) with the integers checked and converted
	// and a denial that writes nothing (zsetCheckedScript).
	minZSetChecked = minZSet + ", ratelua's contract, integers checked and converted"
	// minZSetNewest is the exact log's least work under ratelua's contract
	// on a set whose events are all in the window (zsetNewestScript).
	minZSetNewest = "minimum: ZRANGE -1 -1 + ZCARD + ZADD + PEXPIRE (exact log), ratelua's contract, the newest event read"
	minHash       = "minimum: HMGET + HSET + PEXPIRE of one field (sliding window)"
)

// rowName is the table name of a ratelua row of a version.
func rowName(version int, row string) string {
	return fmt.Sprintf("ratelua v%d %s", version, row)
}

// rateluaContenders are the ratelua rows: every script on the newest
// version (the Go API's default) with the targets, then the same
// rows pinned to comparedVersion (no targets) when it is embedded and not
// the newest. Each row but the hot-key ones is followed by its FCALL twin.
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
	// 8 limits: the 1-limit row's limit first (it is the one that denies),
	// then 7 looser ones of 60 buckets each, so that the row costs the 1-limit
	// row's decision plus 7 limits.
	sw8 := []ratelua.Window{sw1}
	for i, d := range []time.Duration{2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour} {
		sw8 = append(sw8, ratelua.Window{Max: int64(200 * (i + 1)), Duration: d, Resolution: d / 60})
	}
	type row struct {
		name, script, job string
		build             buildFunc
		// The newest version's targets.
		cost, fcallCost, mem float64
		memRef               bool // bytes per key at most comparedVersion's
		peerMax              float64
		peerStrict           bool
		minimum              string
		ref                  string
		refMax               float64
		hot                  bool // hot keys, full window; no FCALL twin
		serverClock          bool // the script reads TIME (no Options.Clock)
	}
	windowBuild := func(ws ...ratelua.Window) buildFunc {
		return func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
			return ratelua.NewSlidingWindow(ratelua.Rueidis(c), o, ws...)
		}
	}
	bucketsRow := func(name string, n int) row {
		w := ratelua.Window{Max: sweepMax, Duration: sweepWindow, Resolution: sweepWindow / time.Duration(n)}
		return row{name: name, script: "sliding_window", build: windowBuild(w), hot: true}
	}
	rows := []row{
		{name: rowTokenBucket1, script: "token_bucket", job: jobTokenBucket1, cost: 3.3, fcallCost: 3.0, mem: 1.25, peerMax: 0.90, minimum: minGetSet,
			build: func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewTokenBucket(ratelua.Rueidis(c), o, tb1)
			}},
		{name: "token_bucket, 3 limits", script: "token_bucket", memRef: true, minimum: minGetSet,
			build: func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewTokenBucket(ratelua.Rueidis(c), o, tb3...)
			}},
		{name: rowAR1One, script: "ar1", job: jobTokenBucket1, cost: 3.3, fcallCost: 3.0, mem: 1.25, peerMax: 0.90, minimum: minGetSet,
			build: func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewAR1(ratelua.Rueidis(c), o, ar1)
			}},
		{name: rowTokenBucket1 + ", server clock", script: "token_bucket", job: jobTokenBucket1, minimum: minGetSet, serverClock: true,
			build: func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewTokenBucket(ratelua.Rueidis(c), o, tb1)
			}},
		{name: rowAR1One + ", server clock", script: "ar1", job: jobTokenBucket1, minimum: minGetSet, serverClock: true,
			build: func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewAR1(ratelua.Rueidis(c), o, ar1)
			}},
		{name: "ar1, 3 limits", script: "ar1", memRef: true, minimum: minGetSet,
			build: func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewAR1(ratelua.Rueidis(c), o, ar3...)
			}},
		{name: "zset_log, max 100", script: "zset_log", job: jobZSetLog100, cost: 4.3, memRef: true, peerMax: 1, peerStrict: true, minimum: minZSet,
			build: func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewZSetLog(ratelua.Rueidis(c), o, ratelua.Log{Max: 100, Window: time.Minute})
			}},
		{name: rowWindow1, script: "sliding_window", job: jobSlidingWindow1, cost: 4.0, memRef: true, minimum: minHash, build: windowBuild(sw1)},
		{name: "sliding_window, 3 limits", script: "sliding_window", job: jobSlidingWindow3, cost: 5.0, memRef: true, minimum: minHash, build: windowBuild(sw3...)},
		{name: "sliding_window, 8 limits (60 buckets each)", script: "sliding_window", job: jobSlidingWindow8, memRef: true, minimum: minHash,
			ref: rowWindow1, refMax: 2, build: windowBuild(sw8...)},
		bucketsRow(rowBuckets10, 10),
		bucketsRow(rowBuckets10000, 10000),
	}
	var cs []contender
	for _, version := range []int{0, comparedVersion} {
		for _, r := range rows {
			newest := newestVersion(r.script)
			v := version
			if v == 0 {
				v = newest
			} else if v == newest || !embedded(r.script, v) {
				continue
			}
			c := rlClock(rowName(v, r.name), r.job, version, r.serverClock, r.build)
			c.minimum = r.minimum
			if r.ref != "" {
				c.ref = rowName(v, r.ref)
			}
			if r.name == rowBuckets10000 {
				c.ref = rowName(v, rowBuckets10)
			}
			if version == 0 {
				c.cost, c.fcallCost, c.mem, c.peerMax, c.peerStrict = r.cost, r.fcallCost, r.mem, r.peerMax, r.peerStrict
				c.refMax = r.refMax
				if r.name == rowBuckets10000 {
					c.refMax = 1.5
				}
				if r.memRef && embedded(r.script, comparedVersion) && comparedVersion != v {
					c.memRef = rowName(comparedVersion, r.name)
				}
			}
			if r.hot {
				c.keys, c.warm, c.noMem = hotKeys(sweepKeys), sweepWindow+sweepMargin, true
				cs = append(cs, c)
				continue
			}
			cs = append(cs, c, twin(c, r.build))
		}
		cs = append(cs, concurrencyContenders(version)...)
		cs = append(cs, reserveContenders(version, "token_bucket", rowTokenBucket1, func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
			return ratelua.NewTokenBucket(ratelua.Rueidis(c), o, tb1)
		})...)
		cs = append(cs, reserveContenders(version, "zset_log", "zset_log, max 100", func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
			return ratelua.NewZSetLog(ratelua.Rueidis(c), o, ratelua.Log{Max: 100, Window: time.Minute})
		})...)
		cs = append(cs, reserveContenders(version, "sliding_window", rowWindow1, windowBuild(sw1))...)
	}
	return cs
}

// reserveRunner makes a decision a reserve of 2 tokens and, when it is
// admitted, its settle with 1 (two script calls) through the Limiter.
type reserveRunner struct{ l *ratelua.Limiter }

func (r reserveRunner) Decide(ctx context.Context, eventKey string) error {
	res, err := r.l.Reserve(ctx, eventKey, 2)
	if err != nil || !res.Held() {
		return err
	}
	_, err = res.Settle(ctx, 1)
	return err
}

func (r reserveRunner) StateKeys(eventKey string) []string { return []string{r.l.Key(eventKey)} }

// reserveContenders are a script's reserve + settle pair of a version
// (0: the newest) and its FCALL twin, beside the row of one Allow (base,
// the same limits, built by build): a reserve of 2 units settled with 1,
// two script calls costed together (a denied reserve makes one). None
// when the version takes no reservations, or a pinned version is the
// newest.
func reserveContenders(version int, script, base string, build buildFunc) []contender {
	newest := newestVersion(script)
	v := version
	if v == 0 {
		v = newest
	} else if v == newest || !embedded(script, v) {
		return nil
	}
	reserves := false
	for _, s := range ratelua.Scripts() {
		if s.Name == script && s.Version == v {
			reserves = s.Reserves()
		}
	}
	if !reserves {
		return nil
	}
	row := func(functions bool) contender {
		c := contender{
			name: rowName(v, base+", reserve + settle"), group: groupRatelua, cmds: scriptCmds, calls: 2,
			functions: functions, version: version,
			make: func(e *env) (runner, error) {
				// A prefix of its own ("rs", as long as the others), so that
				// it never meets the state the Allow row left.
				l, err := build(e.rc, ratelua.Options{Prefix: "rs", Clock: e.now, Version: version, Functions: functions})
				if err != nil {
					return nil, err
				}
				return reserveRunner{l}, nil
			},
		}
		if functions {
			c.name, c.cmds = c.name+fcallSuffix, functionCmds
		}
		return c
	}
	return []contender{row(false), row(true)}
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

// concurrencyContenders are the concurrency script's row of a version (0:
// the newest) and its FCALL twin: one decision is an acquire and a release
// (100 slots, a lease of 30 s), two script calls, costed together. None
// when a pinned version is not embedded or is the newest.
func concurrencyContenders(version int) []contender {
	newest := newestVersion("concurrency")
	v := version
	if v == 0 {
		v = newest
	} else if v == newest || !embedded("concurrency", v) {
		return nil
	}
	row := func(functions bool) contender {
		c := contender{
			name: rowName(v, "concurrency, acquire + release"), group: groupRatelua, cmds: scriptCmds, calls: 2,
			functions: functions, version: version,
			make: func(e *env) (runner, error) {
				s, err := ratelua.NewConcurrency(ratelua.Rueidis(e.rc),
					ratelua.Options{Prefix: versionPrefix(version), Clock: e.now, Version: version, Functions: functions},
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
	now    func() time.Time
}

func (f fixedWindowRunner) StateKeys(eventKey string) []string {
	k := "rueidislimiter:{" + eventKey + "}"
	return []string{k, k + ":ex"}
}

func (f fixedWindowRunner) Decide(ctx context.Context, eventKey string) error {
	now := f.now()
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
				return fixedWindowRunner{client: e.rc, window: time.Minute, now: e.now}, nil
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
