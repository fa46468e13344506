package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratelua/ratelua"
)

// decider decides the descriptors of one rule with one ratelua limiter.
//
// A reference rule of L requests per unit D is the reference's fixed
// window: a count per descriptor and window aligned to D, to which every
// hit is added (the reference's INCRBY), over the limit when the count
// after the hits is above L. It is a sliding window with one bucket of D
// (so a window starts on the unit, as the reference's do) that counts
// every attempt (mode 1), with the one limit refMax: the script's remaining
// is then refMax minus the count after the call, so the service knows the
// count before and after each request exactly, and decides L itself. The
// limiter, and so the state, depends on the unit only: every reference
// rule and limit override of a unit shares one decider, and a descriptor
// keeps its count when a reload changes its requests_per_unit or when it
// carries its own limit, as in the reference.
type decider struct {
	limiter   *ratelua.Limiter
	reference bool
	maxN      int64         // hits above it decide as it does
	span      time.Duration // a reference rule's unit
	limits    []Limit
}

// refMax is the one limit of a reference rule's sliding window: the most
// the scripts take. Counts above it saturate (every answer stays the
// same: requests_per_unit is below it).
const refMax = maxRequests + 1

// limiterOptions are the settings every limiter shares.
type limiterOptions struct {
	Prefix    string
	Client    ratelua.Client
	DenyCache int
	Fallback  float64
	FailOpen  bool
	Observe   func(context.Context, ratelua.Event)
	Clock     func() time.Time // nil: time.Now, and the server's for extension rules
}

// newReferenceDecider builds the decider of every reference rule of unit
// u.
func newReferenceDecider(u pb.RateLimitResponse_RateLimit_Unit, o limiterOptions) (*decider, error) {
	dur := unitDuration(u)
	clock := o.Clock
	if clock == nil {
		clock = time.Now
	}
	opts := ratelua.Options{Prefix: o.Prefix, Fallback: o.Fallback, FailOpen: o.FailOpen, Observe: o.Observe,
		CountDenied: true, Clock: clock}
	l, err := ratelua.NewSlidingWindow(o.Client, opts, ratelua.Window{Max: refMax, Duration: dur, Resolution: dur})
	if err != nil {
		return nil, fmt.Errorf("rls: the %v window: %w", u, err)
	}
	return &decider{limiter: l, reference: true, maxN: refMax + 1, span: dur}, nil
}

// newDecider builds the limiter of an extension rule.
func newDecider(r *Rule, o limiterOptions) (*decider, error) {
	d := &decider{limits: r.Limits}
	opts := ratelua.Options{Prefix: o.Prefix, Fallback: o.Fallback, FailOpen: o.FailOpen, Observe: o.Observe, Clock: o.Clock}
	opts.DenyCache = o.DenyCache
	var err error
	for _, l := range r.Limits {
		d.maxN = max(d.maxN, int64(l.RequestsPerUnit)+1)
	}
	switch r.Algorithm {
	case "fixed_window", "sliding_window":
		ws := make([]ratelua.Window, len(r.Limits))
		for i, l := range r.Limits {
			dur := l.Duration()
			res := dur
			if r.Algorithm == "sliding_window" {
				res = dur / 10
				if r.Resolution > 0 {
					res = min(r.Resolution, dur)
				}
			}
			ws[i] = ratelua.Window{Max: int64(l.RequestsPerUnit), Duration: dur, Resolution: res}
		}
		d.limiter, err = ratelua.NewSlidingWindow(o.Client, opts, ws...)
	case "token_bucket":
		bs := make([]ratelua.Bucket, len(r.Limits))
		for i, l := range r.Limits {
			bs[i] = ratelua.Bucket{Capacity: int64(l.RequestsPerUnit), RefillAmount: int64(l.RequestsPerUnit), RefillInterval: l.Duration()}
		}
		d.limiter, err = ratelua.NewTokenBucket(o.Client, opts, bs...)
	case "zset_log":
		ls := make([]ratelua.Log, len(r.Limits))
		for i, l := range r.Limits {
			ls[i] = ratelua.Log{Max: int64(l.RequestsPerUnit), Window: l.Duration()}
		}
		d.limiter, err = ratelua.NewZSetLog(o.Client, opts, ls...)
	case "ar1":
		ds := make([]ratelua.Decay, len(r.Limits))
		for i, l := range r.Limits {
			ds[i] = ratelua.Decay{Max: int64(l.RequestsPerUnit), Factor: 2, Resolution: l.Duration() / 2}
		}
		d.limiter, err = ratelua.NewAR1(o.Client, opts, ds...)
	default:
		err = fmt.Errorf("unknown algorithm %q", r.Algorithm)
	}
	if err != nil {
		return nil, fmt.Errorf("rls: rule %s: %w", r.Key, err)
	}
	return d, nil
}

// decision is one descriptor's answer from its limiter.
type decision struct {
	allowed    bool
	remaining  int64
	retryAfter time.Duration // ratelua.Never when it can never be admitted
	resetAfter time.Duration
	index      int // 0-based
}

// job is one descriptor to decide.
type job struct {
	d     *decider
	key   string // the event key
	n     uint64 // hits
	limit uint32 // a reference rule's requests_per_unit
	kept  uint64 // hits the deny cache answered before, sent with these
	out   decision
	err   error

	// How a reference rule's job was answered, besides by the server:
	// local by the deny cache, open by FailOpen, fallback by the
	// limiter's in-memory fallback.
	local, open, fallback bool
}

// scriptN is the eventCount sent for the job's hits and those kept.
func (j *job) scriptN() int64 {
	if n := j.n + j.kept; n < j.n || n > uint64(j.d.maxN) {
		return j.d.maxN
	}
	return int64(j.n + j.kept)
}

// counts are a reference job's count of its window before and after the
// request's hits (after its answer, whoever gave it) and the limit they
// are held to: requests_per_unit, or under the fallback its share.
func (j *job) counts(share float64) (before, after, limit uint64) {
	limit = uint64(j.limit)
	top := int64(refMax)
	if j.fallback {
		top = int64(shareOf(refMax, share))
		limit = shareOf(uint64(j.limit), share)
	}
	after = uint64(top - min(max(j.out.remaining, 0), top))
	if sent := uint64(j.scriptN()); after >= sent {
		before = after - sent + min(j.kept, sent)
	}
	return before, after, limit
}

// decideBatch decides every job in one round trip per node (when the
// client batches), now being the request's time for reference rules.
func decideBatch(ctx context.Context, client ratelua.Client, jobs []*job, now time.Time) {
	if len(jobs) == 0 {
		return
	}
	calls := make([]ratelua.Call, len(jobs))
	replies := make([][]int64, len(jobs))
	flat := make([]int64, 5*len(jobs))
	for i, j := range jobs {
		args := j.d.limiter.Args(j.scriptN())
		if j.d.reference {
			args[2] = nowIn(args[1], now)
		}
		calls[i] = ratelua.Call{Command: "EVALSHA", Script: j.d.limiter.Script().SHA1, Key: j.d.limiter.Key(j.key), Args: args}
		replies[i] = flat[5*i : 5*i+5]
	}
	errs := runBatch(ctx, client, calls, replies)
	for i, j := range jobs {
		err := errs[i]
		if isNoScript(err) {
			// Script.Run loads the script on that node (EVAL).
			err = j.d.limiter.Script().Run(ctx, client, calls[i].Key, calls[i].Args, replies[i])
		}
		if err != nil {
			j.err = err
			continue
		}
		j.out = decode(replies[i], calls[i].Args[1])
	}
}

// runBatch sends calls in one round trip per node when the client
// batches, else one by one.
func runBatch(ctx context.Context, client ratelua.Client, calls []ratelua.Call, replies [][]int64) []error {
	if b, ok := client.(interface {
		RunBatch(context.Context, []ratelua.Call, [][]int64) []error
	}); ok {
		return b.RunBatch(ctx, calls, replies)
	}
	errs := make([]error, len(calls))
	for i := range calls {
		errs[i] = client.Run(ctx, calls[i], replies[i])
	}
	return errs
}

// decideGathered decides every job through its Limiter, the path that
// keeps the limiters' deny cache, fallback and fail-open, and still sends
// the request's calls in one round trip per node: each job runs on its
// own goroutine, and the gathering client the limiters were built on
// holds each call until every job has made its call or answered without
// one, then sends them together (a second round only for the calls that
// met NOSCRIPT). A reference rule's call is made at now, the request's
// time.
func decideGathered(ctx context.Context, client ratelua.Client, jobs []*job, now time.Time) {
	if len(jobs) == 0 {
		return
	}
	var t *trip
	if len(jobs) > 1 {
		t = &trip{ctx: ctx, client: client, active: len(jobs)}
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		r := &jobRun{trip: t, index: i}
		if j.d.reference {
			r.now = now
		}
		run := func() {
			decideOne(context.WithValue(ctx, jobKey{}, r), j, r)
			if t != nil {
				t.leave()
			}
		}
		if i == len(jobs)-1 {
			run()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	wg.Wait()
}

// decideOne decides one job by its limiter.
func decideOne(ctx context.Context, j *job, r *jobRun) {
	var res ratelua.Result
	var err error
	if n := j.scriptN(); n == 0 {
		res, err = j.d.limiter.Peek(ctx, j.key)
	} else {
		res, err = j.d.limiter.AllowN(ctx, j.key, n)
	}
	switch {
	case err != nil && !res.Allowed:
		j.err = err
		return
	case err != nil:
		j.open = true
	case !r.answered:
		// No error, and the server did not answer: the fallback did (or,
		// for an extension rule, possibly the deny cache).
		j.fallback = true
	}
	j.out = decision{allowed: res.Allowed, remaining: res.Remaining, retryAfter: res.RetryAfter, resetAfter: res.ResetAfter, index: res.Limit}
}

// jobKey is the context key of a job's jobRun.
type jobKey struct{}

// jobRun is what the gathering client knows of the job whose limiter
// calls it: the round trip it joins, the time of a reference rule's call,
// and whether the server answered its last call.
type jobRun struct {
	trip     *trip
	index    int       // the job's place in the request
	now      time.Time // zero: the limiter's own
	answered bool
}

// gathering is the Client of the limiters on the path with options: a
// call made for a job of decideGathered joins the job's round trip; any
// other goes straight to the client.
type gathering struct {
	client ratelua.Client
}

// Run sends call, or has it sent with the calls of the other jobs of its
// request.
func (g gathering) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	r, _ := ctx.Value(jobKey{}).(*jobRun)
	if r == nil {
		return g.client.Run(ctx, call, reply)
	}
	if !r.now.IsZero() && len(call.Args) > 2 {
		call.Args = slices.Clone(call.Args)
		call.Args[2] = nowIn(call.Args[1], r.now)
	}
	var err error
	if r.trip != nil {
		err = r.trip.run(r.index, call, reply)
	} else {
		err = g.client.Run(ctx, call, reply)
	}
	r.answered = err == nil
	return err
}

// trip gathers the calls of a request's jobs into one round trip per
// node: the calls wait until every job still deciding has made one.
type trip struct {
	ctx    context.Context
	client ratelua.Client

	mu     sync.Mutex
	active int // jobs still deciding
	queue  []queued
}

// queued is one call waiting for its round trip.
type queued struct {
	index int // the job's place in the request
	call  ratelua.Call
	reply []int64
	done  chan error
}

// run queues the call of the job at index and waits for its answer.
func (t *trip) run(index int, call ratelua.Call, reply []int64) error {
	done := make(chan error, 1)
	t.mu.Lock()
	t.queue = append(t.queue, queued{index: index, call: call, reply: reply, done: done})
	ready := t.take()
	t.mu.Unlock()
	t.send(ready)
	return <-done
}

// leave says a job has decided: the calls waiting for it go.
func (t *trip) leave() {
	t.mu.Lock()
	t.active--
	ready := t.take()
	t.mu.Unlock()
	t.send(ready)
}

// take returns the queue when every job still deciding is in it.
func (t *trip) take() []queued {
	if len(t.queue) == 0 || len(t.queue) < t.active {
		return nil
	}
	q := t.queue
	t.queue = nil
	return q
}

// send makes one round trip per node of the calls q, in the order of the
// request's descriptors (as the reference sends them, which decides what
// two descriptors of one count see).
func (t *trip) send(q []queued) {
	if len(q) == 0 {
		return
	}
	slices.SortFunc(q, func(a, b queued) int { return a.index - b.index })
	calls := make([]ratelua.Call, len(q))
	replies := make([][]int64, len(q))
	for i, c := range q {
		calls[i], replies[i] = c.call, c.reply
	}
	for i, err := range runBatch(t.ctx, t.client, calls, replies) {
		q[i].done <- err
	}
}

// isNoScript reports whether err is the server's NOSCRIPT.
func isNoScript(err error) bool {
	var se *ratelua.ServerError
	return errors.As(err, &se) && strings.HasPrefix(se.Message, "NOSCRIPT")
}

// nowIn is t in a script's time unit.
func nowIn(unit string, t time.Time) string {
	switch unit {
	case "s":
		return strconv.FormatInt(t.Unix(), 10)
	case "us":
		return strconv.FormatInt(t.UnixMicro(), 10)
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// decode reads a script's reply {allowed, remaining, retry_after,
// reset_after, limit_index} in the call's unit.
func decode(reply []int64, unit string) decision {
	scale := time.Millisecond
	switch unit {
	case "s":
		scale = time.Second
	case "us":
		scale = time.Microsecond
	}
	dur := func(v int64) time.Duration {
		if v < 0 {
			return ratelua.Never
		}
		if v > int64(math.MaxInt64/scale) {
			return math.MaxInt64
		}
		return time.Duration(v) * scale
	}
	return decision{allowed: reply[0] == 1, remaining: reply[1], retryAfter: dur(reply[2]), resetAfter: dur(reply[3]), index: int(reply[4]) - 1}
}
