package ratelua

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestStateVersionsInManifest: every embedded script names a state
// version, its own or an earlier one of the same script. An earlier one may
// be a development version that left the tree at 0.1.0 (zset_log v5 keeps
// v3's layout): the state key names the layout, not the script.
func TestStateVersionsInManifest(t *testing.T) {
	for _, s := range allScripts(t) {
		if s.StateVersion < 1 || s.StateVersion > s.Version {
			t.Errorf("%s: state version %d, want 1 to %d", s, s.StateVersion, s.Version)
		}
	}
}

// TestScriptsShareStateWithTheirStateVersion drives two engines with the
// same random calls: one runs only the script, the other picks the script
// or the version whose state it keeps at random for every call. Replies,
// the stored state (byte for byte) and its TTL must be the same after every
// call, so the two versions may run on one key in any order.
func TestScriptsShareStateWithTheirStateVersion(t *testing.T) {
	reg := NewRegistry()
	pairs := 0
	defer func() {
		if pairs == 0 && !t.Failed() {
			t.Skip("no embedded script keeps the state layout of another embedded version")
		}
	}()
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		for _, script := range versions(t, name) {
			if script.StateVersion == script.Version {
				continue
			}
			older, err := reg.Lookup(name, script.StateVersion)
			if err != nil {
				// A layout of a version that is no longer embedded.
				continue
			}
			pairs++
			t.Run(script.String()+"+"+older.String(), func(t *testing.T) {
				t.Parallel()
				shareState(t, name, script, older, max(1, *propertyCalls/5))
			})
		}
	}
}

func shareState(t *testing.T, name string, script, older Script, total int) {
	r := rand.New(rand.NewPCG(uint64(len(name)), 4))
	calls, mixed := 0, 0
	for seq := 0; calls < total; seq++ {
		unit := []string{"s", "ms", "us"}[r.IntN(3)]
		_, limits, longest := generators[name](r, unit, nLimits(r))
		alone, shared := frozenEngine(), frozenEngine()
		key := randomKey(r)
		now := r.Int64N(2_000_000_000) * scale(unit)
		var history []string
		for i := 0; i < 200 && calls < total; i++ {
			c := randomCall(r, now, unit, longest)
			now = c.Now
			args := callArgs(c, limits)
			src, by := script.Source, script
			if r.IntN(2) == 0 {
				src, by = older.Source, older
				mixed++
			}
			history = append(history, fmt.Sprintf("%s %v", by, args[:4]))
			if len(history) > 20 {
				history = history[1:]
			}
			want, _, wantErr := runOn(t, alone, script.Source, key, args)
			got, _, gotErr := runOn(t, shared, src, key, args)
			calls++
			if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) || !equalInts(got, want) {
				t.Fatalf("seq %d call %d: %v, %v; %s alone: %v, %v\nlimits %v\nlast calls:\n%s",
					seq, i, got, gotErr, script, want, wantErr, limits, strings.Join(history, "\n"))
			}
			if a, b := alone.Dump(key), shared.Dump(key); !reflect.DeepEqual(a, b) {
				t.Fatalf("seq %d call %d: state %#v; %s alone: %#v\nlimits %v\nlast calls:\n%s",
					seq, i, b, script, a, limits, strings.Join(history, "\n"))
			}
			if a, b := alone.PTTL(key), shared.PTTL(key); a != b {
				t.Fatalf("seq %d call %d: PTTL %d; %s alone: %d", seq, i, b, script, a)
			}
		}
	}
	t.Logf("%d calls, %d of them by %s", calls, mixed, older)
}
