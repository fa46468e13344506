package ratelua

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/internal/modeltest"
)

var propertyCalls = flag.Int("ratelua.calls", 100_000, "random calls per script in the property tests (at least 1)")

var traceCalls = flag.Bool("ratelua.trace", false, "print every property-test call before running it")

// TestScriptsAgreeWithModels drives every script (in luatest) and its
// reference model with long random call sequences and compares every reply
// field, the state key's existence and its TTL.
func TestScriptsAgreeWithModels(t *testing.T) {
	if *propertyCalls < 1 {
		t.Fatalf("-ratelua.calls=%d would make the property tests run no call: give at least 1", *propertyCalls)
	}
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket, Concurrency} {
		for _, script := range versions(t, name) {
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
		total = max(1, total/5)
	}
	src := script.Source
	r := rand.New(rand.NewPCG(uint64(len(name)), 2026))
	calls, decisions, commands := 0, 0, 0
	// ops counts the reserves and settles by outcome (v7), so that a
	// sequence that never applies one fails.
	ops := map[string]int{}
	for seq := 0; calls < total; seq++ {
		unit := []string{"s", "ms", "us"}[r.IntN(3)]
		m, limits, longest := generators[name](r, unit, nLimits(r))
		for modeltest.SavesBehind(m, script.Version) {
			// v5 and v6 keep their known limit (lua/README.md).
			m, limits, longest = generators[name](r, unit, nLimits(r))
		}
		m = forVersion(m, script.Version)
		e := frozenEngine()
		key := randomKey(r)
		now := r.Int64N(2_000_000_000) * scale(unit)
		if seq%10 == 0 {
			now = r.Int64N(1000) // times near zero
		}
		// A quarter of sliding_window's sequences draw no reserve or settle
		// (v7): a key that holds a reservation takes the general code only,
		// and the fast paths need keys that never did.
		plain := seq%4 == 3 && name == SlidingWindow
		var history []string
		for i := 0; i < 400 && calls < total; i++ {
			c := nextCall(r, m, now, unit, longest)
			if plain {
				c = randomCall(r, now, unit, longest)
			}
			now = c.Now
			args := callArgs(c, limits)
			want := m.Do(c).Ints()
			// The call's own arguments: ARGV[1..4] and a lease id.
			shown := append(args[:4:4], args[4+len(limits):]...)
			if *traceCalls {
				fmt.Println(name, seq, i, limits, shown)
			}
			got, res, err := runOn(t, e, src, key, args)
			calls++
			history = append(history, fmt.Sprintf("%v -> %v", shown, want))
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
			switch {
			case c.Op == model.OpReserve && want[0] == 1:
				ops["reserve admitted"]++
			case c.Op == model.OpReserve:
				ops["reserve denied"]++
			case c.Op == model.OpSettle && want[4] == 0:
				ops["settle not applied"]++
			case c.Op == model.OpSettle:
				ops["settle applied"]++
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
	if len(ops) > 0 {
		t.Logf("%s: reservations %v", script, ops)
		for _, k := range []string{"reserve admitted", "reserve denied", "settle applied", "settle not applied"} {
			if total >= 10_000 && ops[k] < total/1000 {
				t.Errorf("%s: only %d calls of %d were a %s: the sequences do not exercise it", script, ops[k], calls, k)
			}
		}
	}
}
