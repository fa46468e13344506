package decide

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratelua/ratelua/internal/denycache"
	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/internal/wire"
)

var ms = wire.Units[1]

// errDown stands for a call that got no answer.
var errDown = errors.New("down")

// server is the wire of these tests: a key admitted up to max events,
// then denied for a minute; down, every call gets no answer. It counts
// what reaches it.
type server struct {
	max, used int64
	down      bool
	sent      int
	recorded  []fallback.Recorded
}

func (s *server) wire() Wire {
	return Wire{
		Send: func(_ context.Context, _ string, n int64, _, _ string) (wire.Result, error, bool) {
			s.sent++
			if s.down {
				return wire.Result{Limit: -1}, errDown, true
			}
			if s.used+n > s.max {
				return wire.Result{RetryAfter: time.Minute, ResetAfter: time.Minute}, nil, false
			}
			s.used += n
			return wire.Result{Allowed: true, Remaining: s.max - s.used, ResetAfter: time.Minute}, nil, false
		},
		Record: func(_ context.Context, events []fallback.Recorded) { s.recorded = append(s.recorded, events...) },
	}
}

// observed collects what the Observe stage saw.
type observed struct{ events []Event }

func (o *observed) hook(_ context.Context, e Event) { o.events = append(o.events, e) }

func decideOne(c *Chain, key string, n int64) (Decision, wire.Result, error) {
	d := c.Begin(key, n, time.Time{}, false)
	r, err := c.Decide(context.Background(), &d, "")
	return d, r, err
}

// TestStagesInOrder: the deny cache answers a denial in the process, the
// dry run admits it, and Observe sees each decision as the caller got
// it: the server's admission, its denial, then the cache's.
func TestStagesInOrder(t *testing.T) {
	s := &server{max: 1}
	var o observed
	c := &Chain{Deny: Deny{Cache: denycache.New(10), Unit: ms}, Wire: s.wire(), DryRun: DryRun{On: true}, Observe: Observe{Hook: o.hook}}
	for i, want := range []struct {
		kind  string
		local bool
		sent  int
	}{{KindAllowed, false, 1}, {KindDryRun, false, 2}, {KindDryRun, true, 2}} {
		d, r, err := decideOne(c, "k", 1)
		if err != nil || !r.Allowed || r.DryRunDenied != (want.kind == KindDryRun) || d.Kind != want.kind || d.Local != want.local || s.sent != want.sent {
			t.Fatalf("call %d: %+v %v kind %s local %v, %d sent; want %s local %v, %d sent", i, r, err, d.Kind, d.Local, s.sent, want.kind, want.local, want.sent)
		}
		if e := o.events[len(o.events)-1]; e.Kind != want.kind || e.Local != want.local || e.N != 1 {
			t.Errorf("call %d observed as %+v", i, e)
		}
	}
	if len(o.events) != 3 {
		t.Errorf("%d events for 3 calls", len(o.events))
	}
}

// TestFallbackThenRecord: calls that get no answer are decided by the
// fallback (after 0), observed as entering it; the first answer ends it,
// and what it admitted goes to the wire to be recorded.
func TestFallbackThenRecord(t *testing.T) {
	s := &server{max: 10, down: true}
	var o observed
	models := fallback.New(0, 0, func() model.Model {
		return &model.ZSetLog{Limits: []model.ZSetLogLimit{{Max: 2, Window: 60_000}}}
	})
	c := &Chain{Deny: Deny{Cache: denycache.New(10), Unit: ms}, Fallback: Fallback{F: models, Unit: ms}, Wire: s.wire(), Observe: Observe{Hook: o.hook}}
	admitted := 0
	for range 4 {
		d, r, err := decideOne(c, "k", 1)
		if err != nil || d.Kind != KindFallback {
			t.Fatalf("during the outage: %+v %v kind %s, want the fallback's decision", r, err, d.Kind)
		}
		if r.Allowed {
			admitted++
		}
	}
	if admitted != 2 {
		t.Errorf("the fallback admitted %d of 4, its share is 2", admitted)
	}
	kinds := map[string]int{}
	for _, e := range o.events {
		kinds[e.Kind]++
	}
	if kinds[KindFallbackEnter] != 1 || kinds[KindFallback] != 4 {
		t.Errorf("observed %v, want one fallback_enter and 4 fallback decisions", kinds)
	}
	s.down = false
	for tries := 0; len(s.recorded) == 0; tries++ {
		if tries == 10 {
			t.Fatalf("10 answered calls and nothing recorded: the fallback never ended")
		}
		decideOne(c, "k", 0)
	}
	if len(s.recorded) != 1 || s.recorded[0] != (fallback.Recorded{Key: "k", N: 2}) {
		t.Errorf("recorded %+v, want the 2 events the fallback admitted for k", s.recorded)
	}
}

// TestFailOpenSettlesTheDenyCache: an unanswered call that FailOpen
// admitted counts as recorded: it drops a cached denial of the key.
func TestFailOpenSettlesTheDenyCache(t *testing.T) {
	s := &server{max: 0}
	c := &Chain{Deny: Deny{Cache: denycache.New(10), Unit: ms}, Wire: s.wire()}
	if _, r, _ := decideOne(c, "k", 2); r.Allowed {
		t.Fatal("admitted over the maximum")
	}
	if d, _, _ := decideOne(c, "k", 2); !d.Local {
		t.Fatal("the denial was not cached")
	}
	d := c.Begin("k", 1, time.Time{}, false)
	c.Local(context.Background(), &d)
	c.Settle(context.Background(), &d, wire.Result{Allowed: true, Limit: -1}, errDown, true)
	if d, _, _ := decideOne(c, "k", 2); d.Local {
		t.Error("a call that may have recorded events left the key's denial cached")
	}
}

// TestNothingOnIsTheWire: a chain with no stage on says so, reads no
// clock, and its answer is the wire's.
func TestNothingOnIsTheWire(t *testing.T) {
	s := &server{max: 1}
	c := &Chain{Wire: s.wire()}
	if c.On() || c.Timed() {
		t.Fatal("a chain with no stage claims to be on")
	}
	d, r, err := decideOne(c, "k", 1)
	if err != nil || !r.Allowed || !d.Start.IsZero() || d.Kind != KindAllowed || s.sent != 1 {
		t.Errorf("%+v %v, start %v kind %s, %d sent", r, err, d.Start, d.Kind, s.sent)
	}
}

// TestDeniedLocallyAllocatesNothing: the stages are concrete types, so a
// decision the deny cache answers, through dry run and a hook, allocates
// nothing in the chain.
func TestDeniedLocallyAllocatesNothing(t *testing.T) {
	s := &server{max: 0}
	calls := 0
	c := &Chain{Deny: Deny{Cache: denycache.New(10), Unit: ms}, Wire: s.wire(), DryRun: DryRun{On: true}, Observe: Observe{Hook: func(context.Context, Event) { calls++ }}}
	decideOne(c, "k", 1)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		d := c.Begin("k", 1, time.Time{}, false)
		c.Decide(ctx, &d, "")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per locally denied decision, want 0", allocs)
	}
	if s.sent != 1 || calls < 100 {
		t.Errorf("%d sent, %d observed: the cache did not answer", s.sent, calls)
	}
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		r    wire.Result
		err  error
		want string
	}{
		{wire.Result{Allowed: true}, nil, KindAllowed},
		{wire.Result{}, nil, KindDenied},
		{wire.Result{Allowed: true}, errDown, KindFailOpen},
		{wire.Result{}, errDown, KindError},
	} {
		if got := KindOf(c.r, c.err); got != c.want {
			t.Errorf("KindOf(%+v, %v) = %s, want %s", c.r, c.err, got, c.want)
		}
	}
}
