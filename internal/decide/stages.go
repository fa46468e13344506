package decide

import (
	"context"
	"time"

	"github.com/ratelua/ratelua/internal/denycache"
	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/internal/wire"
)

// Deny is the deny cache stage (Options.DenyCache): a denial the server
// gave is answered in the process until its RetryAfter.
type Deny struct {
	Cache *denycache.Cache // nil: off
	Unit  wire.Unit
}

// denyState is a decision's call in flight in the deny cache.
type denyState struct {
	flight bool   // registered in flight
	gen    uint64 // the cache's generation of the key then
}

// before answers d from the cache, or registers it in flight.
func (s *Deny) before(d *Decision) bool {
	if s.Cache == nil {
		return false
	}
	a, gen, ok := s.Cache.Answer(d.Key, max(d.N, 1), s.time(d), s.Unit.Size)
	if ok {
		d.Result = wire.Result{Remaining: a.Remaining, RetryAfter: a.RetryAfter, ResetAfter: a.ResetAfter, Limit: a.Limit}
		d.Local = true
		return true
	}
	d.deny = denyState{flight: true, gen: gen}
	return false
}

// cancel ends d's call in flight: it was not sent after all.
func (s *Deny) cancel(d *Decision) {
	if d.deny.flight {
		s.Cache.Settle(d.Key, d.deny.gen, false, denycache.Denial{}, false)
		d.deny.flight = false
	}
}

// after ends d's call in flight with the server's answer in d: events
// recorded (or, without an answer, perhaps recorded) make any denial given
// before no longer the server's answer; a denial with a wait is stored.
func (s *Deny) after(d *Decision) {
	if !d.deny.flight {
		return
	}
	r, err := d.Result, d.Err
	recorded := d.N > 0 && (err != nil || r.Allowed)
	var denied denycache.Denial
	var ok bool
	if err == nil && !r.Allowed && r.RetryAfter > 0 {
		var slack time.Duration
		if !d.Clocked {
			// The server read its clock after d.Start and rounded it down.
			slack = s.Unit.Size
		}
		denied, ok = denycache.DenialOf(max(d.N, 1), s.time(d), slack, r.RetryAfter, r.ResetAfter, r.Remaining, r.Limit)
	}
	s.Cache.Settle(d.Key, d.deny.gen, recorded, denied, ok)
	d.deny.flight = false
}

// Changed drops key's denial: its state on the server changed.
func (s *Deny) Changed(key string) {
	if s.Cache != nil {
		s.Cache.Changed(key)
	}
}

// time is the deny cache's time of d: a caller's time rounded down to the
// unit, as the script reads it; else the process's clock when the call
// began.
func (s *Deny) time(d *Decision) time.Time {
	if !d.Clocked {
		return d.At
	}
	return d.At.Truncate(s.Unit.Size)
}

// Fallback is the fallback stage (Options.Fallback): while the server
// cannot be reached, the in-process models decide.
type Fallback struct {
	F    *fallback.Fallback // nil: off
	Unit wire.Unit
	Mode int // 1 when denied events are recorded too (Options.CountDenied)
	// Exact says that a decision's Key is its state key as given
	// (Options.ExactKeys), whose slot is the key's own, not its tag's.
	Exact bool
}

// fallbackState is where a decision stands with the fallback.
type fallbackState struct {
	followed bool // the key's slot is followed
	slot     int  // the state key's hash slot
	probe    bool // this call asks the server for the fallback
}

// before answers d from the models when its slot is down, unless d is the
// fallback's probe.
func (s *Fallback) before(d *Decision) bool {
	if s.F == nil {
		return false
	}
	slot := wire.TagSlot(d.Key)
	if s.Exact {
		slot = wire.Slot(d.Key)
	}
	d.fallback = fallbackState{followed: true, slot: slot}
	local, probe := s.F.Route(d.fallback.slot, d.Start)
	if local {
		s.decide(d, nil)
		d.Local = true
		return true
	}
	d.fallback.probe = probe
	return false
}

// after tells the fallback whether the server answered d: without an
// answer the fallback may decide d; an answer that ends the fallback
// returns the events it recorded meanwhile, for the server.
func (s *Fallback) after(ctx context.Context, d *Decision, unanswered bool, o *Observe) []fallback.Recorded {
	if s.F == nil || !d.fallback.followed {
		return nil
	}
	end := time.Now()
	if unanswered {
		use, entered, since := s.F.Fail(d.fallback.slot, d.fallback.probe, d.Start, end)
		if entered {
			o.Emit(ctx, Event{Kind: KindFallbackEnter, Err: d.Err, Latency: since, Result: wire.Result{Limit: -1}})
		}
		if use {
			s.decide(d, d.Err)
		}
		return nil
	}
	left, used := s.F.Answer(d.fallback.slot, d.fallback.probe, end)
	if !left {
		return nil
	}
	o.Emit(ctx, Event{Kind: KindFallbackLeave, Latency: used, Result: wire.Result{Limit: -1}})
	return s.F.TakeRecorded()
}

// decide has the models decide d; cause is the failure they answer for,
// nil when the server was not asked.
func (s *Fallback) decide(d *Decision, cause error) {
	call := model.Call{Count: d.N, Now: s.Unit.Now(d.At), Mode: s.Mode, Unit: s.Unit.Name}
	if d.Res != nil && d.Res.Op == OpReserve {
		call.Op, call.ID, call.Lifetime, call.Mode = model.OpReserve, d.Res.ID, d.Res.Lifetime, 0
	}
	ints := s.F.Decide(d.Key, call)
	d.Result, d.Err, d.Cause, d.Kind = wire.Decode(ints[:], s.Unit), nil, cause, KindFallback
}

// SettleLocal settles (or cancels) d, a reservation the fallback's model
// holds (its reserve was decided by the fallback), with the model: the
// server never heard of it. It returns the model's reply, as the script's
// to a settle.
func (s *Fallback) SettleLocal(d *Decision) wire.Result {
	call := model.Call{Count: d.N, Now: s.Unit.Now(d.At), Unit: s.Unit.Name, Op: model.OpSettle, ID: d.Res.ID}
	ints := s.F.Settle(d.Key, call, d.Res.Estimate)
	d.Local = true
	return wire.Decode(ints[:], s.Unit)
}

// Wire is the round trip, which the root package's client calls make:
// one call, and the events the fallback recorded during an outage.
type Wire struct {
	// Send sends one call of n events of key at now, in mode (the
	// script's ARGV[4]; "" for the limiter's own) and returns the answer
	// under FailOpen, and whether the call got no answer.
	Send func(ctx context.Context, key string, n int64, mode, now string) (r wire.Result, err error, unanswered bool)
	// Record records on the server, counted even over the limits, the
	// events the fallback recorded while it decided (best effort).
	Record func(ctx context.Context, events []fallback.Recorded)
}

func (s *Wire) record(ctx context.Context, events []fallback.Recorded) {
	if s.Record != nil {
		s.Record(ctx, events)
	}
}

// DryRun is the dry-run stage (Options.DryRun): every call is admitted,
// and a denial says so in DryRunDenied.
type DryRun struct {
	On bool
}

// apply admits d and returns its kind: KindDryRun for a denial of the
// limits.
func (s *DryRun) apply(d *Decision, kind string) string {
	if !s.On || d.Result.Allowed {
		return kind
	}
	d.Result.Allowed = true
	if d.Err == nil {
		d.Result.DryRunDenied = true
		if kind == KindDenied {
			kind = KindDryRun
		}
	}
	return kind
}

// Observe is the observation stage (Options.Observe): the hook sees every
// decision, script load and fallback switch.
type Observe struct {
	Hook func(ctx context.Context, e Event) // nil: off
}

// Event is what the hook sees; the root package adds the limiter's names.
type Event struct {
	Kind    string
	N       int64
	Result  wire.Result
	Err     error
	Latency time.Duration
	Local   bool
}

// Emit tells the hook of e, if there is one.
func (s *Observe) Emit(ctx context.Context, e Event) {
	if s.Hook != nil {
		s.Hook(ctx, e)
	}
}
