package ratelua

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/testbench"
)

// sharedStates names the scripts that keep an earlier version's state
// layout, and that version; every other script keeps its own.
var sharedStates = map[string]int{
	"token_bucket@v4": 3, "ar1@v4": 3, "zset_log@v4": 3, "sliding_window@v4": 3,
	"token_bucket@v5":   5,
	"ar1@v5":            5,
	"zset_log@v5":       3,
	"sliding_window@v5": 5,
}

// TestStateVersionsInManifest: every embedded script names a state
// version, its own or an earlier one of the same script, as sharedStates
// says.
func TestStateVersionsInManifest(t *testing.T) {
	for _, s := range Scripts() {
		want := s.Version
		if v, ok := sharedStates[s.String()]; ok {
			want = v
		}
		if s.StateVersion != want {
			t.Errorf("%s: state version %d, want %d", s, s.StateVersion, want)
		}
		if _, err := NewRegistry().Lookup(s.Name, s.StateVersion); err != nil {
			t.Errorf("%s: state version %d names no script: %v", s, s.StateVersion, err)
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
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		for _, script := range versions(name) {
			if script.StateVersion == script.Version {
				continue
			}
			older, err := reg.Lookup(name, script.StateVersion)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(script.String()+"+"+older.String(), func(t *testing.T) {
				t.Parallel()
				shareState(t, name, script, older, *propertyCalls/5)
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

// TestLimitersShareStateAcrossStateVersion: on real servers, a limiter
// pinned to v3 and one pinned to v4 with the same prefix and limits name the
// same state key and decide on one state; a v2 limiter does not, nor the
// default (v5, whose token_bucket keeps a state of its own, version 5).
func TestLimitersShareStateAcrossStateVersion(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		at := time.Unix(1_800_000_000, 0)
		limiter := func(version int) *Limiter {
			l, err := NewTokenBucket(Rueidis(client), Options{Prefix: "sharedstate", Version: version, Clock: func() time.Time { return at }},
				Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		v2, v3, v4, newest := limiter(2), limiter(3), limiter(4), limiter(0)
		if v4.Key("k") != v3.Key("k") || v2.Key("k") == v3.Key("k") || newest.Key("k") == v3.Key("k") {
			t.Fatalf("keys: newest %s, v4 %s, v3 %s, v2 %s", newest.Key("k"), v4.Key("k"), v3.Key("k"), v2.Key("k"))
		}
		t.Cleanup(func() { client.Do(ctx, client.B().Del().Key(v2.Key("k"), v3.Key("k"), newest.Key("k")).Build()) })
		for i, step := range []struct {
			l         *Limiter
			allowed   bool
			remaining int64
		}{{v3, true, 2}, {v4, true, 1}, {v3, true, 0}, {v4, false, 0}, {v2, true, 2}, {newest, true, 2}} {
			r, err := step.l.Allow(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if r.Allowed != step.allowed || r.Remaining != step.remaining {
				t.Fatalf("call %d by %s: allowed %v remaining %d, want %v %d", i, step.l.Script(), r.Allowed, r.Remaining, step.allowed, step.remaining)
			}
		}
	})
}
