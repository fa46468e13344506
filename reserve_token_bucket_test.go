package ratelua

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/luatest"
)

// scriptVersion returns version v of script name.
func scriptVersion(t *testing.T, name string, v int) Script {
	t.Helper()
	for _, s := range versions(t, name) {
		if s.Version == v {
			return s
		}
	}
	t.Fatalf("%s v%d is not embedded", name, v)
	return Script{}
}

// refusedUnchanged runs args and requires an "ERR ratelua:" error reply
// containing want and the keyspace unchanged.
func refusedUnchanged(t *testing.T, e *luatest.Engine, src string, args []string, want string) {
	t.Helper()
	before, pttl := e.Dump(testKey), e.PTTL(testKey)
	_, err := e.Run(src, []string{testKey}, args)
	var er *luatest.ErrorReply
	if !errors.As(err, &er) || !strings.HasPrefix(er.Msg, "ERR ratelua: ") || !strings.Contains(er.Msg, want) {
		t.Fatalf("ARGV %q: error %v, want an ERR ratelua: reply containing %q", args, err, want)
	}
	if after := e.Dump(testKey); !reflect.DeepEqual(before, after) || e.PTTL(testKey) != pttl {
		t.Fatalf("ARGV %q: refused, but the state went from %#v to %#v (PTTL %d to %d)", args, before, after, pttl, e.PTTL(testKey))
	}
}

// TestReserveRefusesBadInput: every malformed reservation argument is an
// error naming it, and writes nothing.
func TestReserveRefusesBadInput(t *testing.T) {
	src := source(t, TokenBucket)
	e := frozenEngine()
	if _, _, err := run(t, e, src, []string{"3", "s", "1000", "reserve:5:60", "10", "10", "60"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"1", "s", "1000", "reserve:0:60", "10", "10", "60"}, "ARGV[4] mode must be"},
		{[]string{"1", "s", "1000", "reserve:1", "10", "10", "60"}, "ARGV[4] mode must be"},
		{[]string{"1", "s", "1000", "reserve:1:0", "10", "10", "60"}, "ARGV[4] mode must be"},
		{[]string{"1", "s", "1000", "reserve:4503599627370497:1", "10", "10", "60"}, "ARGV[4] mode must be"},
		{[]string{"1", "s", "1000", "reserve:1:4503599627370497", "10", "10", "60"}, "ARGV[4] mode must be"},
		{[]string{"1", "s", "1000", "settle:05", "10", "10", "60"}, "ARGV[4] mode must be"},
		{[]string{"1", "s", "1000", "settle:5:60", "10", "10", "60"}, "ARGV[4] mode must be"},
		{[]string{"1", "s", "1000", "cancel:5", "10", "10", "60"}, "ARGV[4] mode must be"},
		{[]string{"0", "s", "1000", "reserve:6:60", "10", "10", "60"}, "ARGV[1] estimate of a reserve"},
		{[]string{"-1", "s", "1000", "reserve:6:60", "10", "10", "60"}, "ARGV[1] estimate of a reserve"},
		{[]string{"-1", "s", "1000", "settle:5", "10", "10", "60"}, "ARGV[1] actual cost of a settle"},
		{[]string{"x", "s", "1000", "settle:5", "10", "10", "60"}, "ARGV[1] eventCount"},
		{[]string{"1", "s", "1000", "settle:5", "10", "10"}, "limits of 3 integers"},
		{[]string{"1", "s", "1000", "settle:5", "10", "0", "60"}, "ARGV[6] (limit 1 refill_amount)"},
		// A held id with another unit or other limits.
		{[]string{"1", "s", "1000", "settle:5", "10", "10", "61"}, "ARGV[2] and ARGV[5..] must be the unit and the limits of reservation 5"},
		{[]string{"1", "ms", "1000", "settle:5", "10", "10", "60"}, "ARGV[2] and ARGV[5..] must be the unit and the limits of reservation 5"},
		{[]string{"1", "s", "1000", "settle:5", "10", "10", "60", "10", "10", "60"}, "ARGV[2] and ARGV[5..] must be the unit and the limits of reservation 5"},
		{[]string{"1", "s", "1000", "reserve:5:60", "10", "10", "30"}, "ARGV[2] and ARGV[5..] must be the unit and the limits of reservation 5"},
	} {
		refusedUnchanged(t, e, src, c.args, c.want)
	}
}

// TestReserveCap: a key holds at most model.MaxReservations reservations;
// a reserve of a new id past them is refused (nothing written) until
// one is settled or expires, when the expired ones are dropped.
func TestReserveCap(t *testing.T) {
	src := source(t, TokenBucket)
	e := frozenEngine()
	limits := []string{"1000000000", "1", "1"}
	call := func(count int64, now int64, mode string) ([]int64, error) {
		got, _, err := run(t, e, src, append([]string{fmt.Sprint(count), "s", fmt.Sprint(now), mode}, limits...))
		return got, err
	}
	for i := 1; i <= model.MaxReservations; i++ {
		// Half of them expire at 1100, the others at 2000.
		lifetime := 100
		if i%2 == 0 {
			lifetime = 1000
		}
		if got, err := call(1, 1000, fmt.Sprintf("reserve:%d:%d", i, lifetime)); err != nil || got[0] != 1 {
			t.Fatalf("reserve %d: %v %v", i, got, err)
		}
	}
	refusedUnchanged(t, e, src, append([]string{"1", "s", "1099", "reserve:5000:60"}, limits...), "1000 open reservations")
	// A reserve retried (a held id) and a denied reserve are no new ones.
	if got, err := call(1, 1099, "reserve:7:100"); err != nil || got[0] != 1 {
		t.Fatalf("reserve of a held id: %v %v", got, err)
	}
	if got, err := call(2_000_000_000, 1099, "reserve:5000:60"); err != nil || got[0] != 0 {
		t.Fatalf("a denied reserve past the cap: %v %v, want denied", got, err)
	}
	// A settle makes room for one.
	if got, err := call(0, 1099, "settle:2"); err != nil || got[4] == 0 {
		t.Fatalf("settle 2: %v %v", got, err)
	}
	if got, err := call(1, 1099, "reserve:5000:60"); err != nil || got[0] != 1 {
		t.Fatalf("reserve after a settle: %v %v", got, err)
	}
	refusedUnchanged(t, e, src, append([]string{"1", "s", "1099", "reserve:5001:60"}, limits...), "1000 open reservations")
	// At 1100 the odd ones have expired: the next reserve drops them.
	if got, err := call(1, 1100, "reserve:5001:60"); err != nil || got[0] != 1 {
		t.Fatalf("reserve after half expired: %v %v", got, err)
	}
	fields := e.Dump(testKey).(map[string]string)
	if want := 2 + model.MaxReservations/2 - 1 + 2; len(fields) != want {
		t.Fatalf("the hash holds %d fields after the expired were dropped, want %d (s, o, the even ids but 2, 5000, 5001)", len(fields), want)
	}
	if got, err := call(0, 1100, "settle:3"); err != nil || got[4] != 0 || got[2] != -1 {
		t.Fatalf("settle of an expired (dropped) id: %v %v, want not applied", got, err)
	}
}

// TestReserveStateAndV6: a key without reservations is v6's string, read
// and written by both versions; one holding some is a hash v6 refuses,
// unchanged; the settle of the last one makes it v6's string again.
func TestReserveStateAndV6(t *testing.T) {
	v6, v7 := scriptVersion(t, TokenBucket, 6).Source, source(t, TokenBucket)
	e := frozenEngine()
	limits := []string{"10", "10", "60"}
	call := func(src string, args ...string) []int64 {
		t.Helper()
		got, _, err := run(t, e, src, append(args, limits...))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return got
	}
	call(v6, "2", "s", "1000", "0")
	if e.Type(testKey) != "string" {
		t.Fatalf("v6 wrote a %s", e.Type(testKey))
	}
	if got := call(v7, "3", "s", "1000", "reserve:9:120"); !equalInts(got, ints64(1, 5, 0, 30, 1)) {
		t.Fatalf("reserve on v6's state: %v, want 5 left of 10 after 2 and 3", got)
	}
	if e.Type(testKey) != "hash" {
		t.Fatalf("a key holding a reservation is a %s, want a hash", e.Type(testKey))
	}
	// The key outlives the hold: the lifetime and the refill of the 3
	// units held after it (18 s at 10 per 60 s), longer than reset_after.
	if pttl := e.PTTL(testKey); pttl != 138_000 {
		t.Fatalf("PTTL %d, want the lifetime 120 s + 18 s (longer than reset_after 30 s)", pttl)
	}
	refusedUnchanged(t, e, v6, append([]string{"1", "s", "1001", "0"}, limits...), "holds a value of another type than token_bucket state")
	if got := call(v7, "1", "s", "1000", "0"); !equalInts(got, ints64(1, 4, 0, 36, 1)) {
		t.Fatalf("a plain call on the hash: %v", got)
	}
	if pttl := e.PTTL(testKey); pttl != 138_000 {
		t.Fatalf("PTTL %d after a plain call, want 138000: a hash's TTL never shortens", pttl)
	}
	if got := call(v7, "1", "s", "1000", "settle:9"); !equalInts(got, ints64(1, 6, 0, 24, 1)) {
		t.Fatalf("settle 9 (used 1 of 3): %v, want 2 given back", got)
	}
	if e.Type(testKey) != "string" || e.PTTL(testKey) != 24_000 {
		t.Fatalf("after the last settle: a %s with PTTL %d, want v6's string with PTTL 24000", e.Type(testKey), e.PTTL(testKey))
	}
	if got := call(v6, "1", "s", "1000", "0"); !equalInts(got, ints64(1, 5, 0, 30, 1)) {
		t.Fatalf("v6 on the string v7 wrote back: %v", got)
	}
}

// TestSettleAppliesOnce: a settle retried, a refund capped at capacity,
// a charge into debt that later calls wait for, and an expired id.
func TestSettleAppliesOnce(t *testing.T) {
	src := source(t, TokenBucket)
	e := frozenEngine()
	call := func(args ...string) []int64 {
		t.Helper()
		got, _, err := run(t, e, src, append(args, "10", "1", "1"))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return got
	}
	// A bucket of 10 refilled 1 per second; reservation 99 stays open
	// throughout, so the key stays a hash and every settle forgets its id
	// there (HDEL), not by turning it back into a string. It holds its
	// unit (issue 32): the bucket refills to 9 at most.
	for _, c := range []struct {
		args []string
		want []int64
	}{
		{[]string{"1", "s", "100", "reserve:99:1000"}, ints64(1, 9, 0, 1, 1)},
		{[]string{"6", "s", "100", "reserve:1:50"}, ints64(1, 3, 0, 7, 1)},
		{[]string{"1", "s", "105", "settle:1"}, ints64(1, 8, 0, 2, 1)},  // held until now (3 + 7 = 10: no refill); 5 given back: 8
		{[]string{"1", "s", "105", "settle:1"}, ints64(0, 8, -1, 2, 0)}, // retried: nothing
		{[]string{"1", "s", "105", "settle:1"}, ints64(0, 8, -1, 2, 0)},
		{[]string{"6", "s", "105", "reserve:2:50"}, ints64(1, 2, 0, 8, 1)},
		{[]string{"20", "s", "105", "settle:2"}, ints64(0, 0, 11, 20, 1)}, // 14 charged: at -10 (bounded)
		{[]string{"20", "s", "105", "settle:2"}, ints64(0, 0, -1, 20, 0)},
		{[]string{"0", "s", "114", "0"}, ints64(0, 0, 2, 11, 1)}, // in debt until 115
		{[]string{"0", "s", "115", "0"}, ints64(0, 0, 1, 10, 1)}, // paid off: 0 tokens
		{[]string{"1", "s", "116", "0"}, ints64(1, 0, 0, 10, 1)},
		{[]string{"4", "s", "116", "reserve:3:10"}, ints64(0, 0, 4, 10, 1)},
		{[]string{"1", "s", "126", "reserve:3:10"}, ints64(1, 8, 0, 2, 1)}, // refilled to 9 (99 holds 1)
		{[]string{"0", "s", "136", "settle:3"}, ints64(0, 8, -1, 2, 0)},    // expired at 136, its hold just ended
		{[]string{"0", "s", "137", "0"}, ints64(1, 9, 0, 1, 1)},            // refilled from its end
	} {
		if got := call(c.args...); !equalInts(got, c.want) {
			t.Fatalf("%q: %v, want %v", c.args, got, c.want)
		}
	}
}

// TestReservationRefusedElsewhere: ar1 v7 refuses a
// reserve or a settle with an error that says so (and why), nothing
// written; concurrency takes its own modes only.
func TestReservationRefusedElsewhere(t *testing.T) {
	for _, c := range []struct {
		name, limits, why string
	}{
		{AR1, "5 2000 60", "ar1 v7 does not take reserve or settle (its state keeps one decayed count"},
		{Concurrency, "5 60", "ARGV[4] mode must be"},
	} {
		src := source(t, c.name)
		e := frozenEngine()
		limits := strings.Fields(c.limits)
		if _, _, err := run(t, e, src, append([]string{"1", "s", "1000", "0"}, limits...)); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"reserve:1:60", "settle:1"} {
			refusedUnchanged(t, e, src, append([]string{"1", "s", "1000", mode}, limits...), c.why)
		}
	}
}

// TestReserveHoldsItsUnits: a reservation holds its units in the bucket
// (issue 32). A full bucket with a live reservation of 4 refills only to
// capacity - 4 until the settle; after the settle it refills again; a
// reservation that expires unsettled holds until its expiry and the
// bucket refills from then. With one limit and with two (the second
// refilling at half the rate), every reply also as the model gives it.
func TestReserveHoldsItsUnits(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits []string
		// remaining at 1061 and 1202: one second after the settle and
		// two after the expiry.
		afterSettle, afterExpiry int64
	}{
		{"one limit", []string{"10", "1", "1"}, 10, 8},
		{"two limits", []string{"10", "1", "1", "10", "1", "2"}, 9, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := source(t, TokenBucket)
			e := frozenEngine()
			m := &model.TokenBucket{BehindCounts: true, Reserves: true}
			for i := 0; i < len(c.limits); i += 3 {
				var l model.TokenBucketLimit
				fmt.Sscan(c.limits[i], &l.Capacity)
				fmt.Sscan(c.limits[i+1], &l.RefillAmount)
				fmt.Sscan(c.limits[i+2], &l.RefillInterval)
				m.Limits = append(m.Limits, l)
			}
			call := func(count, now int64, mode string) []int64 {
				t.Helper()
				args := append([]string{fmt.Sprint(count), "s", fmt.Sprint(now), mode}, c.limits...)
				got, _, err := run(t, e, src, args)
				if err != nil {
					t.Fatalf("%q: %v", args, err)
				}
				mc := model.Call{Count: count, Now: now, Unit: "s"}
				if op, id, lifetime, ok := model.ParseReservation(mode); ok {
					mc.Op, mc.ID, mc.Lifetime = op, id, lifetime
				}
				if want := m.Do(mc).Ints(); !equalInts(got, want) {
					t.Fatalf("%q: %v, the model says %v", args, got, want)
				}
				return got
			}
			remaining := func(now, want int64, why string) {
				t.Helper()
				if got := call(0, now, "0"); got[1] != want {
					t.Fatalf("peek at %d: %v, want %d remaining: %s", now, got, want, why)
				}
			}
			if got := call(4, 1000, "reserve:1:100"); got[0] != 1 || got[1] != 6 {
				t.Fatalf("reserve 4 of a full bucket: %v, want admitted with 6 left", got)
			}
			remaining(1050, 6, "50 s of refill, but 4 are held: capacity - 4")
			if got := call(7, 1050, "0"); got[0] != 0 {
				t.Fatalf("7 at 1050 with 4 held: %v, want denied (6 at most)", got)
			}
			remaining(1059, 6, "still held")
			if got := call(1, 1060, "settle:1"); got[0] != 1 || got[1] != 9 {
				t.Fatalf("settle 1 of 4: %v, want 9 (6 + 3 given back)", got)
			}
			if e.Type(testKey) != "string" {
				t.Fatalf("after the last settle the key is a %s, want v6's string", e.Type(testKey))
			}
			remaining(1061, c.afterSettle, "refilling again after the settle")
			remaining(1099, 10, "full")
			// A reservation that expires unsettled (its holder gone).
			if got := call(4, 1100, "reserve:2:100"); got[0] != 1 || got[1] != 6 {
				t.Fatalf("reserve 4 at 1100: %v, want admitted with 6 left", got)
			}
			remaining(1150, 6, "held")
			remaining(1199, 6, "held until the expiry at 1200")
			remaining(1200, 6, "expired now: no refill yet")
			remaining(1202, c.afterExpiry, "refilling from the expiry")
			if got := call(1, 1203, "settle:2"); got[4] != 0 {
				t.Fatalf("settle of the expired id: %v, want not applied", got)
			}
			remaining(1210, 10, "full: its units spent at the reserve, its hold gone")
			if got := call(1, 1210, "0"); got[0] != 1 || e.Type(testKey) != "string" {
				t.Fatalf("1 at 1210: %v on a %s, want admitted and the expired reservation dropped (v6's string)", got, e.Type(testKey))
			}
		})
	}
}

// TestReserveHoldsEndOneByOne: two reservations that expire unsettled
// one after the other release their holds one by one, exactly: until the
// first expiry both hold (the bucket at capacity - 7), between the two
// the second alone (capacity - 4), and the bucket refills from each
// expiry, not from the last write. Every reply also as the model gives
// it.
func TestReserveHoldsEndOneByOne(t *testing.T) {
	src := source(t, TokenBucket)
	e := frozenEngine()
	m := &model.TokenBucket{Limits: []model.TokenBucketLimit{{Capacity: 10, RefillAmount: 1, RefillInterval: 1}}, BehindCounts: true, Reserves: true}
	call := func(count, now int64, mode string) []int64 {
		t.Helper()
		args := []string{fmt.Sprint(count), "s", fmt.Sprint(now), mode, "10", "1", "1"}
		got, _, err := run(t, e, src, args)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		mc := model.Call{Count: count, Now: now, Unit: "s"}
		if op, id, lifetime, ok := model.ParseReservation(mode); ok {
			mc.Op, mc.ID, mc.Lifetime = op, id, lifetime
		}
		if want := m.Do(mc).Ints(); !equalInts(got, want) {
			t.Fatalf("%q: %v, the model says %v", args, got, want)
		}
		return got
	}
	call(3, 1000, "reserve:1:150") // held until 1150
	call(4, 1000, "reserve:2:151") // held until 1151
	for _, c := range []struct{ now, remaining int64 }{
		{1149, 3},  // both held: 10 - 7
		{1150, 3},  // the first just ended: no refill yet
		{1151, 4},  // refilled 1 from 1150; the second just ended
		{1152, 5},  // from 1151 on, nothing held
		{1157, 10}, // full
	} {
		if got := call(0, c.now, "0"); got[1] != c.remaining {
			t.Fatalf("peek at %d: %v, want %d remaining", c.now, got, c.remaining)
		}
	}
}
