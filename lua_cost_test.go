package ratelua

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
)

// cost is what the command traces of many decisions add up to.
type cost struct {
	decisions, calls, worst, fields int
	// staleWorst is the worst of the decisions that read TIME with a
	// caller's clock: only a state far ahead does (v6's stale rule), and
	// it may then be deleted; worst is of the others.
	staleWorst int
}

func (c *cost) add(calls, fields int) {
	c.decisions++
	c.calls += calls
	c.fields += fields
	c.worst = max(c.worst, calls)
}

func (c cost) perDecision() float64 { return float64(c.calls) / float64(c.decisions) }

// TestCostPerDecision measures redis.calls per decision from the command
// trace over long random sequences (caller clock, both modes, all kinds of
// time steps), for 1 to 16 limits, and holds each script to its budget:
// token_bucket and ar1 at most 3 on every decision whatever the number of
// limits (GET and SET at most, but for a state far ahead of a caller's
// clock: GET, TIME, DEL, SET), zset_log at most 4 per limit and sliding_window at most 5,
// amortised.
func TestCostPerDecision(t *testing.T) {
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		for _, n := range []int{1, 2, 4, 8, 16} {
			src := source(t, name)
			r := rand.New(rand.NewPCG(uint64(n), 7))
			var c cost
			for seq := 0; seq < 10; seq++ {
				unit := []string{"s", "ms", "us"}[seq%3]
				m, limits, longest := generators[name](r, unit, n)
				e := frozenEngine()
				now := int64(1_700_000_000) * scale(unit)
				for range 200 {
					call := randomCall(r, now, unit, longest)
					now = call.Now
					want := m.Do(call).Ints()
					got, res, err := run(t, e, src, callArgs(call, limits))
					if err != nil || !equalInts(got, want) {
						t.Fatalf("%s: %v %v, model %v", name, got, err, want)
					}
					if call.Count >= 0 && res.Count("TIME") > 0 {
						c.staleWorst = max(c.staleWorst, res.Count(""))
					} else if call.Count >= 0 {
						c.add(res.Count(""), 0)
					}
				}
			}
			budget := map[string]float64{SlidingWindow: 5, AR1: 3, TokenBucket: 3, ZSetLog: 4 * float64(n)}[name]
			t.Logf("%s, %d limits: %.2f redis.calls per decision (worst %d)", name, n, c.perDecision(), c.worst)
			if c.perDecision() > budget {
				t.Errorf("%s, %d limits: %.2f redis.calls per decision, budget %.0f", name, n, c.perDecision(), budget)
			}
			if (name == AR1 || name == TokenBucket) && c.worst > 2 {
				t.Errorf("%s, %d limits: a decision cost %d calls, want GET and SET at most", name, n, c.worst)
			}
			if (name == AR1 || name == TokenBucket) && c.staleWorst > 4 {
				t.Errorf("%s, %d limits: a decision on a state far ahead cost %d calls, want GET, TIME, DEL and SET at most", name, n, c.staleWorst)
			}
		}
	}
}

// TestServerClockCost: the server clock adds exactly one TIME call, so
// token_bucket and ar1 stay within 3 calls.
func TestServerClockCost(t *testing.T) {
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		src := source(t, name)
		e := frozenEngine()
		for i := range 50 {
			args := append([]string{strconv.Itoa(i % 3), "ms", "", strconv.Itoa(i % 2)}, scaleLimits(name, loginLimits[name], "ms")...)
			_, res, err := run(t, e, src, args)
			if err != nil {
				t.Fatal(err)
			}
			if res.Count("TIME") != 1 {
				t.Errorf("%s: %d TIME calls", name, res.Count("TIME"))
			}
			if (name == AR1 || name == TokenBucket) && res.Count("") > 3 {
				t.Errorf("%s: %d calls with the server clock", name, res.Count(""))
			}
		}
	}
}

// steadyCost runs sliding_window with one limit of `buckets` one-unit
// buckets in a steady state (after a warm-up of 1.25 windows) and returns
// the cost of the measured decisions. Every tick brings perTick events;
// with max = buckets * admit / perTick some are denied in mode 0.
func steadyCost(t *testing.T, buckets, perTick int64, maxEvents int64) cost {
	src := source(t, SlidingWindow)
	e := frozenEngine()
	limits := strs(maxEvents, buckets, 1)
	m := &model.SlidingWindow{Limits: []model.SlidingWindowLimit{{Max: maxEvents, Duration: buckets, Resolution: 1}}}
	var c cost
	now := int64(1_000_000)
	warmUp := buckets + buckets/4 + 100
	ticks := warmUp + 1000
	for tick := int64(0); tick < ticks; tick++ {
		now++
		for range perTick {
			call := model.Call{Count: 1, Now: now, Unit: "s"}
			got, res, err := run(t, e, src, callArgs(call, limits))
			if err != nil {
				t.Fatalf("tick %d: %v", tick, err)
			}
			// The model is slow on big windows; the property test covers
			// correctness, so check it only on the small ones here.
			if buckets <= 100 {
				if want := m.Do(call).Ints(); !equalInts(got, want) {
					t.Fatalf("tick %d: %v, model %v", tick, got, want)
				}
			}
			if tick >= warmUp {
				fields := 0
				for _, cl := range res.Trace {
					if cl.Name == "HMGET" {
						fields += len(cl.Args) - 1
					}
				}
				c.add(res.Count(""), fields)
			}
		}
	}
	return c
}

// TestSlidingWindowSteadyState: in a steady state the cost of a decision
// does not grow with the number of buckets: at most 4 calls, and at most 34
// fields read (16 read ahead on the chain for a denied reply, at most 16
// expired buckets before the advanced ring is saved, the newest and the
// partial bucket), from 10 to 10,000 buckets, allowed or denied, with dense
// or sparse rings.
func TestSlidingWindowSteadyState(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 10,000-bucket windows")
	}
	for _, shape := range []struct {
		name           string
		perTick, ratio int64 // max = buckets * ratio / 4
	}{
		{"all allowed", 1, 8},
		{"half denied, dense", 2, 4},
		{"mostly denied, sparse", 4, 1},
	} {
		for _, buckets := range []int64{10, 100, 1000, 10000} {
			c := steadyCost(t, buckets, shape.perTick, max(1, buckets*shape.ratio/4))
			perFields := float64(c.fields) / float64(c.decisions)
			t.Logf("%s, %5d buckets: %.2f calls, %.2f fields read per decision (worst %d calls)",
				shape.name, buckets, c.perDecision(), perFields, c.worst)
			if c.worst > 4 {
				t.Errorf("%s, %d buckets: a decision cost %d calls, want at most 4", shape.name, buckets, c.worst)
			}
			if perFields > 34 {
				t.Errorf("%s, %d buckets: %.2f fields read per decision, want at most 34", shape.name, buckets, perFields)
			}
		}
	}
}
