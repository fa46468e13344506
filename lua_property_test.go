package ratelua

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
)

var propertyCalls = flag.Int("ratelua.calls", 100_000, "random calls per script in the property tests")

var traceCalls = flag.Bool("ratelua.trace", false, "print every property-test call before running it")

// generator makes a random limit set and its model for one script.
type generator func(r *rand.Rand, unit string, limits int) (model.Model, []string, int64)

// scale returns a time scale for the unit so durations stay realistic.
func scale(unit string) int64 {
	switch unit {
	case "ms":
		return 1000
	case "us":
		return 1_000_000
	}
	return 1
}

func nLimits(r *rand.Rand) int {
	switch p := r.IntN(20); {
	case p == 0:
		return 16
	case p < 10:
		return 1
	default:
		return 2 + r.IntN(3)
	}
}

func strs(xs ...int64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatInt(x, 10)
	}
	return out
}

var generators = map[string]generator{
	SlidingWindow: func(r *rand.Rand, unit string, n int) (model.Model, []string, int64) {
		m := &model.SlidingWindow{}
		var args []string
		var longest int64
		for range n {
			res := (1 + r.Int64N(10)) * scale(unit) / int64(1+r.IntN(4))
			res = max(res, 1)
			dur := res * (1 + r.Int64N(12))
			if r.IntN(3) == 0 {
				dur += r.Int64N(res) // not a multiple: a partial bucket
			}
			l := model.SlidingWindowLimit{Max: 1 + r.Int64N(12), Duration: dur, Resolution: res}
			m.Limits = append(m.Limits, l)
			args = append(args, strs(l.Max, l.Duration, l.Resolution)...)
			longest = max(longest, dur)
		}
		return m, args, longest
	},
	AR1: func(r *rand.Rand, unit string, n int) (model.Model, []string, int64) {
		m := &model.AR1{}
		var args []string
		var longest int64
		for range n {
			decay := []int64{1001, 1100, 1500, 2000, 2718, 10000}[r.IntN(6)]
			if r.IntN(4) == 0 {
				decay = 1001 + r.Int64N(5000)
			}
			res := max(1, (1+r.Int64N(10))*scale(unit)/int64(1+r.IntN(4)))
			l := model.AR1Limit{Max: 1 + r.Int64N(12), Decay: decay, Resolution: res}
			m.Limits = append(m.Limits, l)
			args = append(args, strs(l.Max, l.Decay, l.Resolution)...)
			longest = max(longest, res*20)
		}
		return m, args, longest
	},
	ZSetLog: func(r *rand.Rand, unit string, n int) (model.Model, []string, int64) {
		m := &model.ZSetLog{}
		var args []string
		var longest int64
		for range n {
			l := model.ZSetLogLimit{Max: 1 + r.Int64N(12), Window: 1 + r.Int64N(60*scale(unit))}
			m.Limits = append(m.Limits, l)
			args = append(args, strs(l.Max, l.Window)...)
			longest = max(longest, l.Window)
		}
		return m, args, longest
	},
	TokenBucket: func(r *rand.Rand, unit string, n int) (model.Model, []string, int64) {
		m := &model.TokenBucket{}
		var args []string
		var longest int64
		for range n {
			l := model.TokenBucketLimit{
				Capacity:       1 + r.Int64N(12),
				RefillAmount:   1 + r.Int64N(5),
				RefillInterval: 1 + r.Int64N(10*scale(unit)),
			}
			m.Limits = append(m.Limits, l)
			args = append(args, strs(l.Capacity, l.RefillAmount, l.RefillInterval)...)
			longest = max(longest, l.RefillInterval*l.Capacity/l.RefillAmount)
		}
		return m, args, longest
	},
}

// randomCall draws the next call: counts including 0, negative and huge;
// time steps including zero, large jumps and steps backwards.
func randomCall(r *rand.Rand, now int64, unit string, longest int64) model.Call {
	c := model.Call{Unit: unit, Mode: r.IntN(2)}
	switch p := r.IntN(100); {
	case p < 60:
		c.Count = 1 + r.Int64N(3)
	case p < 72:
		c.Count = 0
	case p < 76:
		c.Count = -1 - r.Int64N(5)
	case p < 94:
		c.Count = 1 + r.Int64N(30)
	case p < 97:
		c.Count = 1 + r.Int64N(1<<40)
	default:
		c.Count = 1 << 52
	}
	var step int64
	switch p := r.IntN(100); {
	case p < 20:
		step = 0
	case p < 70:
		step = r.Int64N(max(longest/8, 1) + 1)
	case p < 85:
		step = r.Int64N(longest + 1)
	case p < 90:
		step = longest + r.Int64N(3*longest+1) // a long idle period
	default:
		step = -r.Int64N(longest + 1) // the caller's clock went back
	}
	c.Now = min(max(now+step, 0), model.MaxTime)
	return c
}

// TestScriptsAgreeWithModels drives every script (in luatest) and its
// reference model with long random call sequences and compares every reply
// field, the state key's existence and its TTL.
func TestScriptsAgreeWithModels(t *testing.T) {
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		for _, script := range versions(name) {
			t.Run(script.String(), func(t *testing.T) {
				t.Parallel()
				agreeWithModel(t, name, script)
			})
		}
	}
}

// agreeWithModel is TestScriptsAgreeWithModels for one script version.
// Older versions are immutable and were proven at their release, so they
// run a fifth of the calls, enough to catch a change in luatest.
func agreeWithModel(t *testing.T, name string, script Script) {
	total := *propertyCalls
	if latest, _ := NewRegistry().Latest(name); latest.Version != script.Version {
		total /= 5
	}
	src := script.Source
	r := rand.New(rand.NewPCG(uint64(len(name)), 2026))
	calls, decisions, commands := 0, 0, 0
	for seq := 0; calls < total; seq++ {
		unit := []string{"s", "ms", "us"}[r.IntN(3)]
		m, limits, longest := generators[name](r, unit, nLimits(r))
		e := frozenEngine()
		key := randomKey(r)
		now := r.Int64N(2_000_000_000) * scale(unit)
		if seq%10 == 0 {
			now = r.Int64N(1000) // times near zero
		}
		var history []string
		for i := 0; i < 400 && calls < total; i++ {
			c := randomCall(r, now, unit, longest)
			now = c.Now
			args := callArgs(c, limits)
			want := m.Do(c).Ints()
			if *traceCalls {
				fmt.Println(name, seq, i, limits, args[:4])
			}
			got, res, err := runOn(t, e, src, key, args)
			calls++
			history = append(history, fmt.Sprintf("%v -> %v", args[:4], want))
			if len(history) > 40 {
				history = history[1:]
			}
			if err != nil {
				t.Fatalf("seq %d call %d: %v\nlimits %v\nlast calls:\n%s", seq, i, err, limits, strings.Join(history, "\n"))
			}
			if !equalInts(got, want) {
				t.Fatalf("seq %d call %d: reply %v, model %v\nkey %q limits %v (unit %s)\nstate %v\nlast calls:\n%s",
					seq, i, got, want, key, limits, unit, e.Dump(key), strings.Join(history, "\n"))
			}
			if c.Count >= 0 {
				decisions++
				commands += res.Count("") - res.Count("TIME")
			}
			if keys := e.Keys(); len(keys) > 1 || len(keys) == 1 && keys[0] != key {
				t.Fatalf("seq %d call %d: keys %q exist, want only the state key %q", seq, i, keys, key)
			}
			exists := e.Type(key) != "none"
			if exists != m.Exists() {
				t.Fatalf("seq %d call %d: key exists %v, model says %v\nlimits %v\nlast calls:\n%s",
					seq, i, exists, m.Exists(), limits, strings.Join(history, "\n"))
			}
			if exists {
				if pttl := e.PTTL(key); pttl != m.TTLMillis() {
					t.Fatalf("seq %d call %d: PTTL %d, model %d\nlimits %v\nlast calls:\n%s",
						seq, i, pttl, m.TTLMillis(), limits, strings.Join(history, "\n"))
				}
			}
		}
	}
	t.Logf("%s: %d calls, %.2f redis.calls per decision", script, calls, float64(commands)/float64(decisions))
}
