package ratelua

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
)

// swStep is one call of a sliding_window reservation sequence: ARGV[1],
// now (in s) and the mode ("0", "1", "reserve:<id>:<lifetime>" or
// "settle:<id>").
type swStep struct {
	count int64
	now   int64
	mode  string
}

// swAgainstModel runs steps on a fresh key with limits, comparing every
// reply and TTL with the model's.
func swAgainstModel(t *testing.T, limits []model.SlidingWindowLimit, steps []swStep) {
	t.Helper()
	src := source(t, SlidingWindow)
	e := frozenEngine()
	m := &model.SlidingWindow{Limits: limits, Reserves: true}
	var argv []string
	for _, l := range limits {
		argv = append(argv, fmt.Sprint(l.Max), fmt.Sprint(l.Duration), fmt.Sprint(l.Resolution))
	}
	for i, s := range steps {
		call := model.Call{Count: s.count, Now: s.now, Unit: "s", Server: 1_700_000_000}
		if op, id, lifetime, ok := model.ParseReservation(s.mode); ok {
			call.Op, call.ID, call.Lifetime = op, id, lifetime
		} else {
			call.Mode = int(s.mode[0] - '0')
		}
		want := m.Do(call).Ints()
		got, _, err := run(t, e, src, append([]string{fmt.Sprint(s.count), "s", fmt.Sprint(s.now), s.mode}, argv...))
		if err != nil || !equalInts(got, want) {
			t.Fatalf("step %d %+v: %v %v, model %v\nstate %v", i, s, got, err, want, e.Dump(testKey))
		}
		if exists := e.Type(testKey) != "none"; exists != m.Exists() {
			t.Fatalf("step %d %+v: key exists %v, model %v", i, s, exists, m.Exists())
		}
		if pttl := e.PTTL(testKey); m.Exists() && pttl != m.TTLMillis() {
			t.Fatalf("step %d %+v: PTTL %d, model %d", i, s, pttl, m.TTLMillis())
		}
	}
}

// TestSlidingWindowSettleAgainstModel runs sequences that a reserve and
// settle of sliding_window v7 must get right, against the model at every
// call: the refund goes back to the bucket the reserve recorded in (not
// the newest one, nor the current one), a bucket that left the window
// gives nothing back (it is out of the count: a refund from it would make
// room that did not exist), a refund that empties the oldest, a middle
// or the newest bucket of the chain (each unlinked), an overrun past
// max, and a settle retried or expired.
func TestSlidingWindowSettleAgainstModel(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits []model.SlidingWindowLimit
		steps  []swStep
	}{
		{"the refund goes to the bucket of the reserve", []model.SlidingWindowLimit{{Max: 10, Duration: 100, Resolution: 10}}, []swStep{
			{5, 5, "reserve:1:1000"}, {3, 25, "0"}, {1, 35, "settle:1"}, {6, 35, "0"}, {1, 40, "0"},
			{1, 99, "0"}, {1, 100, "0"}, {1, 124, "0"}, {2, 126, "0"},
		}},
		{"a bucket out of the window gives nothing back", []model.SlidingWindowLimit{{Max: 10, Duration: 15, Resolution: 10}}, []swStep{
			{6, 0, "reserve:1:100"}, {4, 12, "0"}, {0, 17, "settle:1"}, {0, 17, "0"}, {1, 17, "0"}, {1, 19, "0"},
		}},
		{"the oldest bucket emptied", []model.SlidingWindowLimit{{Max: 8, Duration: 100, Resolution: 10}, {Max: 20, Duration: 50, Resolution: 5}}, []swStep{
			{3, 1, "reserve:1:1000"}, {2, 21, "0"}, {2, 41, "0"}, {0, 45, "settle:1"}, {4, 45, "0"}, {1, 46, "0"},
			{1, 121, "0"}, {1, 141, "0"},
		}},
		{"a middle bucket emptied", []model.SlidingWindowLimit{{Max: 8, Duration: 100, Resolution: 10}}, []swStep{
			{2, 1, "0"}, {3, 21, "reserve:2:1000"}, {2, 41, "0"}, {0, 45, "settle:2"}, {4, 45, "0"}, {1, 46, "0"},
			{1, 101, "0"}, {1, 141, "0"}, {1, 145, "1"}, {9, 146, "1"}, {1, 146, "0"},
		}},
		{"the newest bucket emptied, then passed", []model.SlidingWindowLimit{{Max: 8, Duration: 100, Resolution: 10}, {Max: 5, Duration: 30, Resolution: 10}}, []swStep{
			{2, 1, "0"}, {3, 21, "reserve:3:1000"}, {0, 22, "settle:3"}, {0, 22, "0"}, {4, 45, "0"}, {1, 46, "0"},
			{3, 55, "reserve:4:1000"}, {1, 56, "settle:4"}, {1, 101, "0"}, {1, 131, "0"}, {1, 200, "0"},
		}},
		{"an overrun past max, retried and expired", []model.SlidingWindowLimit{{Max: 5, Duration: 10, Resolution: 1}}, []swStep{
			{3, 100, "reserve:7:20"}, {9, 101, "settle:7"}, {9, 101, "settle:7"}, {1, 101, "0"}, {1, 110, "0"},
			{2, 111, "reserve:8:5"}, {2, 111, "reserve:8:5"}, {0, 116, "settle:8"}, {0, 116, "0"}, {1, 121, "0"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) { swAgainstModel(t, c.limits, c.steps) })
	}
}

// TestSlidingWindowSettleOnce: a settle applies once: retried, it answers
// limit_index 0 and retry_after -1 and changes nothing; the reservation's
// field is gone and "l" is the limits again (no reservation held).
func TestSlidingWindowSettleOnce(t *testing.T) {
	src := source(t, SlidingWindow)
	e := frozenEngine()
	limits := []string{"10", "60", "1"}
	call := func(count int64, now int64, mode string) []int64 {
		t.Helper()
		got, _, err := run(t, e, src, append([]string{fmt.Sprint(count), "s", fmt.Sprint(now), mode}, limits...))
		if err != nil {
			t.Fatalf("%d %d %s: %v", count, now, mode, err)
		}
		return got
	}
	call(6, 1000, "reserve:41:120")
	fields := e.Dump(testKey).(map[string]string)
	if fields["l"] != "s 10 60 1 #1 41:1120:6:1000" {
		t.Fatalf("a key holding reservation 41: state %v, want l 's 10 60 1 #1 41:1120:6:1000'", fields)
	}
	if got := call(2, 1000, "settle:41"); !equalInts(got, []int64{1, 8, 0, 60, 1}) {
		t.Fatalf("settle 41: %v, want [1 8 0 60 1] (6 out, 2 in)", got)
	}
	after := fmt.Sprint(e.Dump(testKey))
	for range 3 {
		if got := call(2, 1000, "settle:41"); !equalInts(got, []int64{0, 8, -1, 60, 0}) {
			t.Fatalf("settle 41 retried: %v, want [0 8 -1 60 0]", got)
		}
	}
	if now := fmt.Sprint(e.Dump(testKey)); now != after {
		t.Fatalf("a settle retried changed the state from %s to %s", after, now)
	}
	fields = e.Dump(testKey).(map[string]string)
	if fields["l"] != "s 10 60 1" {
		t.Fatalf("settled: state %v, want l 's 10 60 1'", fields)
	}
}

// TestSlidingWindowSettleDropsMemo: a settle drops the denial memo
// (fields "d" and "e"), which a reserve's write left stale.
func TestSlidingWindowSettleDropsMemo(t *testing.T) {
	src := source(t, SlidingWindow)
	e := frozenEngine()
	limits := []string{"3", "60", "1", "10", "3600", "60"}
	call := func(count int64, now int64, mode string) []int64 {
		t.Helper()
		got, _, err := run(t, e, src, append([]string{fmt.Sprint(count), "s", fmt.Sprint(now), mode}, limits...))
		if err != nil {
			t.Fatalf("%d %d %s: %v", count, now, mode, err)
		}
		return got
	}
	call(3, 1000, "0")
	if got := call(1, 1001, "0"); got[0] != 0 {
		t.Fatalf("the 4th event in 60 s: %v, want denied", got)
	}
	if fields := e.Dump(testKey).(map[string]string); fields["d"] == "" || fields["e"] == "" {
		t.Fatalf("a denial that records in mode 0 left no memo: state %v", fields)
	}
	if got := call(2, 1061, "reserve:5:600"); got[0] != 1 {
		t.Fatalf("reserve at 1061: %v, want admitted", got)
	}
	if got := call(1, 1062, "settle:5"); got[4] == 0 {
		t.Fatalf("settle at 1062: %v, want applied", got)
	}
	fields := e.Dump(testKey).(map[string]string)
	if _, ok := fields["d"]; ok {
		t.Fatalf("a settle left the denial memo: state %v", fields)
	}
	if _, ok := fields["e"]; ok {
		t.Fatalf("a settle left the denial memo: state %v", fields)
	}
}

// TestSlidingWindowReserveCapAndInput: a key holds at most
// model.MaxReservations reservations (a reserve of a new id past them is
// refused, nothing written, until the expired ones can be dropped), and
// a malformed reservation is an error naming its argument, nothing written.
func TestSlidingWindowReserveCapAndInput(t *testing.T) {
	src := source(t, SlidingWindow)
	e := frozenEngine()
	limits := []string{"1000000000", "3600", "60"}
	call := func(count int64, now int64, mode string) ([]int64, error) {
		got, _, err := run(t, e, src, append([]string{fmt.Sprint(count), "s", fmt.Sprint(now), mode}, limits...))
		return got, err
	}
	for i := 1; i <= model.MaxReservations; i++ {
		lifetime := 100 // the odd ones expire at 1100
		if i%2 == 0 {
			lifetime = 1000
		}
		if got, err := call(1, 1000, fmt.Sprintf("reserve:%d:%d", i, lifetime)); err != nil || got[0] != 1 {
			t.Fatalf("reserve %d: %v %v", i, got, err)
		}
	}
	refusedUnchanged(t, e, src, append([]string{"1", "s", "1099", "reserve:5000:60"}, limits...), "1000 open reservations")
	if got, err := call(1, 1099, "reserve:7:100"); err != nil || got[0] != 1 {
		t.Fatalf("reserve of a held id: %v %v", got, err)
	}
	if got, err := call(1, 1100, "reserve:5000:60"); err != nil || got[0] != 1 {
		t.Fatalf("reserve after half expired: %v %v", got, err)
	}
	fields := e.Dump(testKey).(map[string]string)
	if want := fmt.Sprintf("s %s #%d ", strings.Join(limits, " "), model.MaxReservations/2+1); !strings.HasPrefix(fields["l"], want) ||
		strings.Count(fields["l"], ":") != 3*(model.MaxReservations/2+1) {
		t.Fatalf("after the expired were dropped: l %.80q..., want %q and %d reservations", fields["l"], want, model.MaxReservations/2+1)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"1", "s", "1100", "reserve:0:60"}, "ARGV[4] mode must be"},
		{[]string{"1", "s", "1100", "settle:5:60"}, "ARGV[4] mode must be"},
		{[]string{"0", "s", "1100", "reserve:6:60"}, "ARGV[1] estimate of a reserve"},
		{[]string{"-1", "s", "1100", "settle:2"}, "ARGV[1] actual cost of a settle"},
	} {
		refusedUnchanged(t, e, src, append(c.args, limits...), c.want)
	}
	refusedUnchanged(t, e, src, []string{"1", "s", "1100", "settle:2", "10", "60", "0"}, "ARGV[7]")
}

// swCalls runs calls of sliding_window v7 on one key with limits, failing
// the test on an error.
func swCalls(t *testing.T, limits ...string) func(count, now int64, mode string) []int64 {
	t.Helper()
	src := source(t, SlidingWindow)
	e := frozenEngine()
	return func(count, now int64, mode string) []int64 {
		t.Helper()
		got, _, err := run(t, e, src, append([]string{fmt.Sprint(count), "s", fmt.Sprint(now), mode}, limits...))
		if err != nil {
			t.Fatalf("%d %d %s: %v", count, now, mode, err)
		}
		return got
	}
}

// TestSlidingWindowHeldOutOfTheWindowCounts is rule 1 of issue 32 on the
// script: a reservation held counts in every check after its bucket left
// the window (a decision, a peek, a reserve), until it is settled.
func TestSlidingWindowHeldOutOfTheWindowCounts(t *testing.T) {
	call := swCalls(t, "10", "100", "10")
	call(6, 1000, "reserve:1:10000")
	if got := call(0, 1100, "0"); !equalInts(got, []int64{1, 4, 0, 10000, 1}) {
		t.Fatalf("peek at 1100, the reserve's bucket out of the window: %v, want [1 4 0 10000 1] (6 held)", got)
	}
	if got := call(5, 1100, "reserve:2:100"); got[0] != 0 || got[1] != 4 {
		t.Fatalf("reserve 5 at 1100: %v, want denied with 4 remaining", got)
	}
	if got := call(4, 1100, "0"); got[0] != 1 || got[1] != 0 {
		t.Fatalf("4 at 1100: %v, want allowed with 0 remaining", got)
	}
	if got := call(1, 1150, "0"); got[0] != 0 {
		t.Fatalf("1 at 1150: %v, want denied (4 at 1100 and 6 held)", got)
	}
	// Settled with 1 used: the units used count from now, the rest no more.
	if got := call(1, 1150, "settle:1"); !equalInts(got, []int64{1, 5, 0, 100, 1}) {
		t.Fatalf("settle 1 of 6 at 1150: %v, want [1 5 0 100 1]", got)
	}
}

// TestSlidingWindowSettleRecordsAtNow is rule 2 of issue 32 on the
// script: a settle takes the whole estimate out of the reserve's bucket
// and records the units used in the bucket of now.
func TestSlidingWindowSettleRecordsAtNow(t *testing.T) {
	call := swCalls(t, "10", "100", "10")
	call(8, 1000, "reserve:1:1000")
	if got := call(3, 1060, "settle:1"); !equalInts(got, []int64{1, 7, 0, 100, 1}) {
		t.Fatalf("settle 3 of 8 at 1060: %v, want [1 7 0 100 1]", got)
	}
	// At 1100 the reserve's bucket has left; the 3 used at 1060 count
	// until 1160.
	if got := call(0, 1100, "0"); !equalInts(got, []int64{1, 7, 0, 60, 1}) {
		t.Fatalf("peek at 1100: %v, want [1 7 0 60 1]", got)
	}
	if got := call(8, 1159, "0"); !equalInts(got, []int64{0, 7, 1, 1, 1}) {
		t.Fatalf("8 at 1159: %v, want denied until 1160", got)
	}
	if got := call(0, 1160, "0"); !equalInts(got, []int64{1, 10, 0, 0, 1}) {
		t.Fatalf("peek at 1160: %v, want fresh", got)
	}
}

// TestSlidingWindowExpiredSettledAtExpiry is rule 3 of issue 32 on the
// script: a reservation found expired counts from the bucket of its
// expiry, then is dropped; until found it is held.
func TestSlidingWindowExpiredSettledAtExpiry(t *testing.T) {
	call := swCalls(t, "10", "100", "10")
	call(7, 1000, "reserve:1:150")
	if got := call(0, 1149, "0"); !equalInts(got, []int64{1, 3, 0, 101, 1}) {
		t.Fatalf("peek at 1149: %v, want [1 3 0 101 1] (7 held until 1150)", got)
	}
	if got := call(0, 1200, "0"); !equalInts(got, []int64{1, 3, 0, 50, 1}) {
		t.Fatalf("peek at 1200, found expired: %v, want [1 3 0 50 1] (7 in the bucket of 1150)", got)
	}
	if got := call(1, 1200, "settle:1"); got[4] != 0 {
		t.Fatalf("settle after the expiry: %v, want not applied", got)
	}
	if got := call(4, 1249, "0"); !equalInts(got, []int64{0, 3, 1, 1, 1}) {
		t.Fatalf("4 at 1249: %v, want denied until 1250", got)
	}
	if got := call(0, 1250, "0"); !equalInts(got, []int64{1, 10, 0, 0, 1}) {
		t.Fatalf("peek at 1250: %v, want fresh", got)
	}
	// Found only after the bucket of its expiry left every window: gone.
	call = swCalls(t, "10", "100", "10")
	call(7, 1000, "reserve:1:150")
	if got := call(0, 1300, "0"); !equalInts(got, []int64{1, 10, 0, 0, 1}) {
		t.Fatalf("peek at 1300: %v, want fresh", got)
	}
}

// TestSlidingWindowHoldAgainstModel runs sequences of the hold rule of
// issue 32 against the model at every call (replies, existence, TTL):
// several reservations held across buckets and limits, settled after
// their buckets left some windows, expired ones found together, a clock
// behind the last write.
func TestSlidingWindowHoldAgainstModel(t *testing.T) {
	limits := []model.SlidingWindowLimit{{Max: 10, Duration: 100, Resolution: 10}, {Max: 6, Duration: 30, Resolution: 5}}
	swAgainstModel(t, limits, []swStep{
		{2, 1000, "reserve:1:500"}, {1, 1012, "0"}, {2, 1025, "reserve:2:40"}, {1, 1040, "0"}, {0, 1050, "0"},
		{1, 1066, "reserve:3:20"}, {1, 1070, "settle:1"}, {1, 1088, "0"}, {0, 1090, "0"}, {3, 1101, "0"},
		{2, 1130, "reserve:4:60"}, {2, 1125, "0"}, {0, 1200, "settle:4"}, {1, 1230, "0"}, {1, 1240, "1"},
	})
	swAgainstModel(t, []model.SlidingWindowLimit{{Max: 5, Duration: 10, Resolution: 1}}, []swStep{
		{2, 100, "reserve:1:3"}, {2, 101, "reserve:2:3"}, {1, 102, "reserve:3:50"}, {0, 104, "0"}, {1, 104, "0"},
		{0, 111, "0"}, {2, 112, "1"}, {0, 150, "settle:3"}, {1, 151, "0"}, {0, 170, "0"},
	})
}
