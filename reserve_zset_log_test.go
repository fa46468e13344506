package ratelua

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/internal/modeltest"
	"github.com/ratelua/ratelua/luatest"
)

// TestZSetLogSettleAgainstModel runs sequences that a reserve and settle
// of zset_log v7 must get right, against the model at every call: a
// settle under less than its estimate after a flood of mode-1 events (the
// state drops events past its bound), an id settled and reserved again at
// one time, a settle retried, expired, and reserves and settles on a key
// whose newest event was recorded before it held reservations (the key
// must stay one holding reservations).
func TestZSetLogSettleAgainstModel(t *testing.T) {
	src := source(t, ZSetLog)
	type step struct {
		count int64
		now   int64
		mode  string // "0", "1", "reserve:<id>:<lifetime>" or "settle:<id>"
	}
	for _, c := range []struct {
		name   string
		limits []model.ZSetLogLimit
		steps  []step
	}{
		{"a refund after a flood", []model.ZSetLogLimit{{Max: 10, Window: 100}, {Max: 3, Window: 1}}, []step{
			{8, 0, "1"}, {2, 50, "reserve:1:1000"}, {9, 60, "1"}, {0, 60, "settle:1"}, {0, 60, "0"}, {1, 61, "0"},
		}},
		{"an id settled and reserved again at one time", []model.ZSetLogLimit{{Max: 12, Window: 40}}, []step{
			{2, 10, "reserve:2:100"}, {4, 10, "settle:2"}, {2, 10, "reserve:2:100"}, {1, 10, "settle:2"}, {0, 10, "0"},
			{1, 10, "settle:2"}, {1, 49, "0"}, {1, 50, "0"},
		}},
		{"retried and expired", []model.ZSetLogLimit{{Max: 5, Window: 10}}, []step{
			{3, 100, "reserve:7:20"}, {1, 101, "settle:7"}, {1, 101, "settle:7"}, {1, 101, "settle:7"},
			{2, 102, "reserve:8:5"}, {0, 107, "settle:8"}, {0, 107, "0"}, {1, 111, "0"},
		}},
		{"the newest settled over an older event", []model.ZSetLogLimit{{Max: 5, Window: 10}}, []step{
			{1, 100, "0"}, {2, 101, "reserve:3:50"}, {1, 101, "reserve:4:50"}, {0, 102, "settle:4"}, {0, 102, "settle:3"},
			{1, 103, "0"}, {4, 103, "0"}, {1, 104, "reserve:5:50"}, {5, 104, "settle:5"}, {0, 104, "0"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := frozenEngine()
			m := &model.ZSetLog{Limits: c.limits, Reserves: true}
			var limits []string
			for _, l := range c.limits {
				limits = append(limits, fmt.Sprint(l.Max), fmt.Sprint(l.Window))
			}
			for i, s := range c.steps {
				call := model.Call{Count: s.count, Now: s.now, Unit: "s", Server: 1_700_000_000}
				if op, id, lifetime, ok := model.ParseReservation(s.mode); ok {
					call.Op, call.ID, call.Lifetime = op, id, lifetime
				} else {
					call.Mode = int(s.mode[0] - '0')
				}
				want := m.Do(call).Ints()
				got, _, err := run(t, e, src, append([]string{fmt.Sprint(s.count), "s", fmt.Sprint(s.now), s.mode}, limits...))
				if err != nil || !equalInts(got, want) {
					t.Fatalf("step %d %+v: %v %v, model %v\nstate %v", i, s, got, err, want, e.Dump(testKey))
				}
				if pttl := e.PTTL(testKey); m.Exists() && pttl != m.TTLMillis() {
					t.Fatalf("step %d %+v: PTTL %d, model %d", i, s, pttl, m.TTLMillis())
				}
			}
		})
	}
}

// TestZSetLogReservationsAndV6: a key holding reservations is refused by
// v6 (whose one read, the newest member, is tagged), unchanged; one that
// never held any is v6's; and a key holds at most model.MaxReservations
// open reservations.
func TestZSetLogReservationsAndV6(t *testing.T) {
	v6, v7 := scriptVersion(t, ZSetLog, 6).Source, source(t, ZSetLog)
	e := frozenEngine()
	limits := []string{"10000", "1000000"}
	call := func(src string, args ...string) []int64 {
		t.Helper()
		got, _, err := run(t, e, src, append(args, limits...))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return got
	}
	call(v6, "2", "s", "1000", "0")
	call(v7, "1", "s", "1000", "0")
	call(v6, "1", "s", "1000", "0") // v6 and v7 share a key without reservations
	if got := call(v7, "3", "s", "1001", "reserve:9:120"); got[0] != 1 || got[1] != 10000-7 {
		t.Fatalf("reserve: %v", got)
	}
	for _, args := range [][]string{{"1", "s", "1002", "0"}, {"0", "s", "1002", "0"}} {
		refusedUnchanged(t, e, v6, append(args, limits...), "holds a member that is not a zset_log event")
	}
	if got := call(v7, "0", "s", "1002", "settle:9"); !equalInts(got, ints64(1, 10000-4, 0, 1000000-2, 1)) {
		t.Fatalf("cancel: %v", got)
	}
	refusedUnchanged(t, e, v6, append([]string{"1", "s", "1002", "0"}, limits...), "holds a member that is not a zset_log event")
	// The cap: 1000 open reservations (9, settled, is forgotten).
	for i := 1; i < model.MaxReservations; i++ {
		if got := call(v7, "1", "s", "1003", fmt.Sprintf("reserve:%d:%d", 100+i, 100+i%2*1000)); got[0] != 1 {
			t.Fatalf("reserve %d: %v", i, got)
		}
	}
	if got := call(v7, "1", "s", "1003", "reserve:99:60"); got[0] != 1 {
		t.Fatalf("the 1000th reserve (9 settled dropped): %v", got)
	}
	refusedUnchanged(t, e, v7, append([]string{"1", "s", "1003", "reserve:98:60"}, limits...), "1000 open reservations")
	// At 1103 the even ones (lifetime 100) have expired: dropped, it fits.
	if got := call(v7, "1", "s", "1103", "reserve:98:60"); got[0] != 1 {
		t.Fatalf("a reserve once half expired: %v", got)
	}
	records := 0
	for _, m := range e.Dump(testKey).([]luatest.ZMember) {
		if strings.HasPrefix(m.Member, "r") || strings.HasPrefix(m.Member, "s") {
			records++
		}
	}
	if want := model.MaxReservations/2 + 1; records != want { // the odd ones and 98
		t.Fatalf("%d records after the expired were dropped, want %d", records, want)
	}
}

// TestZSetLogSettleForgetsTheID: a settle (and the conversion of an
// expired reservation) forgets the id, so a key that reserves and settles
// many times holds no record but those of its open reservations, and a
// call on it reads no more records whatever its past (issue 35: a record
// kept per settled id until its lifetime passed made every call on the key
// parse up to 1000 of them). A settle of a forgotten id applies nothing.
func TestZSetLogSettleForgetsTheID(t *testing.T) {
	src := source(t, ZSetLog)
	e := frozenEngine()
	limits := []string{"10000", "1000000"}
	call := func(args ...string) []int64 {
		t.Helper()
		got, _, err := run(t, e, src, append(args, limits...))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return got
	}
	records := func() (n int) {
		for _, m := range e.Dump(testKey).([]luatest.ZMember) {
			if strings.HasPrefix(m.Member, "r") || strings.HasPrefix(m.Member, "s") {
				n++
			}
		}
		return n
	}
	for i := 1; i <= 2*model.MaxReservations; i++ {
		now := fmt.Sprint(1000 + i)
		if got := call("2", "s", now, fmt.Sprintf("reserve:%d:100000", i)); got[0] != 1 {
			t.Fatalf("reserve %d: %v", i, got)
		}
		if n := records(); n != 1 {
			t.Fatalf("after reserve %d the key holds %d records, want 1", i, n)
		}
		if got := call("1", "s", now, fmt.Sprintf("settle:%d", i)); got[4] == 0 {
			t.Fatalf("settle %d applied nothing: %v", i, got)
		}
		if n := records(); n != 0 {
			t.Fatalf("after settle %d the key holds %d records, want 0", i, n)
		}
	}
	if got := call("1", "s", "3000", "settle:7"); got[2] != -1 || got[4] != 0 {
		t.Fatalf("a settle of a forgotten id: %v, want retry_after -1 and limit_index 0", got)
	}
	// An expired reservation converted by a call that records is
	// forgotten too.
	call("3", "s", "3000", "reserve:5000:10")
	call("1", "s", "3010", "0")
	if n := records(); n != 0 {
		t.Fatalf("after a conversion the key holds %d records, want 0", n)
	}
}

// TestZSetLogHoldRule checks the three parts of zset_log v7's hold rule
// (issue 32) against the script, each step against the model too, with
// one limit (the general code every key holding reservations takes) and
// with two (the second never decides): 5 events in any 10 s.
//
//  1. A reservation held counts its estimate in every window, also once
//     the time it was reserved at has left the window.
//  2. A settle records the units used as events at its time: they count
//     from the settle, not from the reserve.
//  3. A reservation found expired by a call that records converts into
//     its estimate as events at its expiry; until then it counts in full.
func TestZSetLogHoldRule(t *testing.T) {
	src := source(t, ZSetLog)
	type step struct {
		count int64
		now   int64
		mode  string
		// allowed and remaining, worked out by hand from the rule.
		allowed, remaining int64
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"1: held in every window", []step{
			{3, 100, "reserve:1:50", 1, 2},
			{2, 105, "0", 1, 0},
			// (102, 112]: the reserve's time has left it, 1 is still held.
			{1, 112, "0", 0, 0},
			{0, 112, "0", 0, 0}, // a peek: denied until 105 leaves (retry 3), 1's 3 still held
		}},
		{"2: units used count from the settle", []step{
			{3, 100, "reserve:1:50", 1, 2},
			{2, 105, "0", 1, 0},
			{1, 113, "settle:1", 1, 2}, // 2 at 105, 1 at 113
			{0, 116, "0", 1, 4},        // 105 has left; 113 counts
			{0, 123, "0", 1, 5},        // 113 has left
		}},
		{"3: expired, converted at its expiry", []step{
			{2, 200, "reserve:1:5", 1, 3},
			{0, 230, "0", 1, 3},        // expired at 205, not found yet: counted in full
			{0, 230, "settle:1", 0, 3}, // a settle of it applies nothing and converts nothing
			{1, 230, "0", 1, 4},        // found by a call that records: 2 at 205, out of (220, 230]
		}},
		{"3: the converted events count from the expiry", []step{
			{2, 200, "reserve:1:5", 1, 3},
			{1, 210, "0", 1, 2}, // converts: 2 at 205 and 1 at 210
			{0, 214, "0", 1, 2}, // (204, 214]: both
			{0, 216, "0", 1, 4}, // (206, 216]: 205 has left
			{0, 216, "settle:1", 0, 4},
		}},
	} {
		for _, limits := range [][]model.ZSetLogLimit{{{Max: 5, Window: 10}}, {{Max: 5, Window: 10}, {Max: 100, Window: 11}}} {
			t.Run(fmt.Sprintf("%s/%d limits", c.name, len(limits)), func(t *testing.T) {
				e := frozenEngine()
				m := &model.ZSetLog{Limits: limits, Reserves: true}
				var args []string
				for _, l := range limits {
					args = append(args, fmt.Sprint(l.Max), fmt.Sprint(l.Window))
				}
				for i, s := range c.steps {
					call := model.Call{Count: s.count, Now: s.now, Unit: "s", Server: 1_700_000_000}
					if op, id, lifetime, ok := model.ParseReservation(s.mode); ok {
						call.Op, call.ID, call.Lifetime = op, id, lifetime
					} else {
						call.Mode = int(s.mode[0] - '0')
					}
					want := m.Do(call).Ints()
					got, _, err := run(t, e, src, append([]string{fmt.Sprint(s.count), "s", fmt.Sprint(s.now), s.mode}, args...))
					if err != nil || !equalInts(got, want) {
						t.Fatalf("step %d %+v: %v %v, model %v\nstate %v", i, s, got, err, want, e.Dump(testKey))
					}
					if got[0] != s.allowed || got[1] != s.remaining {
						t.Fatalf("step %d %+v: %v, want allowed %d with %d remaining\nstate %v", i, s, got, s.allowed, s.remaining, e.Dump(testKey))
					}
				}
			})
		}
	}
}

// TestZSetLogScriptHoldsUntilSettled is TestZSetLogHoldsUntilSettled
// (internal/model) on the script itself, in luatest: a holder's units
// admitted anywhere between its reserve and its settle (or its expiry)
// never make a window admit more than a limit's max.
func TestZSetLogScriptHoldsUntilSettled(t *testing.T) {
	src := source(t, ZSetLog)
	r := rand.New(rand.NewPCG(32, 2031))
	for seq := range 60 {
		limits := modeltest.ZSetLogHoldLimits(r)
		var args []string
		for _, l := range limits {
			args = append(args, fmt.Sprint(l.Max), fmt.Sprint(l.Window))
		}
		e := frozenEngine()
		do := func(c model.Call) model.Reply {
			got, _, err := run(t, e, src, modeltest.CallArgs(c, args))
			if err != nil || len(got) != 5 {
				t.Fatalf("seq %d: %+v: %v %v", seq, c, got, err)
			}
			return model.Reply{Allowed: got[0], Remaining: got[1], RetryAfter: got[2], ResetAfter: got[3], LimitIndex: got[4]}
		}
		if v := modeltest.ZSetLogHoldViolation(r, limits, 400, do); v != "" {
			t.Fatalf("seq %d: %s", seq, v)
		}
	}
}
