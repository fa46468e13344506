package ratelua

import (
	"strconv"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/internal/modeltest"
)

// concurrencyTarget is the concurrency script's fuzz target: limits are
// max and lease, and a renewal or release carries the lease id after them.
var concurrencyTarget = fuzzTarget{
	name: Concurrency, group: 2, login: "2,5",
	modelOf: func(argv []string) model.Model {
		max, _ := strconv.ParseInt(argv[4], 10, 64)
		lease, _ := strconv.ParseInt(argv[5], 10, 64)
		return &model.Concurrency{Max: max, Lease: lease, V6: true, ServerUs: modeltest.FrozenUs}
	},
	shape: concurrencyShape,
	// An acquire of n slots writes n members, one sorted insert each in
	// luatest.
	tooSlow: func(argv []string) bool {
		count, _ := strconv.ParseInt(argv[0], 10, 64)
		max, _ := strconv.ParseInt(argv[4], 10, 64)
		return argv[3] == "0" && count > 2000 && count <= max
	},
}

// concurrencyShape checks a concurrency reply by the contract: allowed 0
// or 1; remaining in [0, max]; retry_after 0 when allowed, else -1 or
// more; reset_after in [0, 2^52]; limit_index 0 after a reset, 1 for a
// decision or a denied acquire, the new lease id (>= 1) of an acquire, the
// lease's id for a renewal or release that succeeded and 0 for one that
// did not (then retry_after is -1).
func concurrencyShape(argv []string, got []int64) string {
	count, _ := strconv.ParseInt(argv[0], 10, 64)
	max, _ := strconv.ParseInt(argv[4], 10, 64)
	allowed, remaining, retry, reset, index := got[0], got[1], got[2], got[3], got[4]
	switch {
	case allowed != 0 && allowed != 1:
		return "allowed not 0 or 1"
	case remaining < 0 || remaining > max:
		return "remaining outside [0, max]"
	case retry < -1 || (allowed == 1 && retry != 0):
		return "retry_after < -1, or not 0 when allowed"
	case reset < 0 || reset > model.MaxTime:
		return "reset_after outside [0, 2^52]"
	}
	switch argv[3] {
	case "renew", "release":
		id, _ := strconv.ParseInt(argv[6], 10, 64)
		if allowed == 1 && index != id || allowed == 0 && (index != 0 || retry != -1) {
			return "not the lease's id when held, or not 0 and retry_after -1 when not"
		}
	default:
		switch {
		case count < 0 && (allowed != 1 || remaining != max || index != 0):
			return "a reset must answer allowed, max remaining and limit_index 0"
		case count > 0 && allowed == 1 && index < 1:
			return "an acquire must answer its lease id"
		case count >= 0 && (count == 0 || allowed == 0) && index != 1:
			return "a decision or a denied acquire must answer limit_index 1"
		}
	}
	return ""
}

// FuzzConcurrency makes two calls of any arguments to the concurrency
// script: the first with mode1, the second with mode2 and, when lease2 is
// not empty, lease2 after the limits (a renewal or release names its lease
// there). Each is checked against the contract and the model.
func FuzzConcurrency(f *testing.F) {
	ft := concurrencyTarget
	latest, err := NewRegistry().Latest(Concurrency)
	if err != nil {
		f.Fatal(err)
	}
	ft.accepts = contractAccepts(latest)
	// The seeds every script's target has, then acquires followed by
	// renewals and releases of their lease, of other slots or other ids,
	// late or not.
	for _, s := range ft.seeds() {
		f.Add(s.count1, s.unit, s.now, s.mode, s.limits, s.count2, s.mode, "", s.step, s.key)
	}
	for _, s := range []struct {
		count1, unit, now, mode1, limits, count2, mode2, lease2 string
		step                                                    int64
	}{
		{"1", "ms", "1000", "0", "2,500", "1", "renew", "1", 100},
		{"1", "ms", "1000", "0", "2,500", "1", "release", "1", 499},
		{"1", "ms", "1000", "0", "2,500", "1", "release", "1", 500}, // expired
		{"1", "ms", "1000", "0", "2,500", "1", "renew", "1", 500},
		{"2", "s", "7", "0", "3,10", "2", "renew", "1", 3},
		{"2", "s", "7", "0", "3,10", "1", "release", "1", 3},  // other slots
		{"2", "s", "7", "0", "3,10", "3", "release", "1", 3},  // other slots
		{"2", "us", "7", "0", "3,10", "2", "release", "2", 3}, // an id not handed out
		{"3", "s", "7", "0", "3,10", "1", "0", "", 0},         // full
		{"3", "s", "7", "0", "3,10", "0", "0", "", 4},
		{"4", "s", "7", "0", "3,10", "1", "0", "", 0}, // more than max
		{"1", "s", "7", "0", "3,10", "-1", "0", "", 0},
		{"1", "s", "", "0", "1,4503599627370496", "1", "renew", "1", 0},
		{"1000", "ms", "5", "0", "1000000,1", "1000", "release", "1", 0},
		{"1", "ms", "5", "renew", "2,5,1", "1", "release", "1", 0},
		// Refused: modes, slots, ids, arguments.
		{"1", "ms", "5", "0", "2,5", "0", "renew", "1", 0},
		{"1", "ms", "5", "0", "2,5", "1000001", "release", "1", 0},
		{"1", "ms", "5", "0", "2,5", "1", "renew", "0", 0},
		{"1", "ms", "5", "0", "2,5", "1", "renew", "01", 0},
		{"1", "ms", "5", "0", "2,5", "1", "renew", "4503599627370497", 0},
		{"1", "ms", "5", "0", "2,5", "1", "renew", "", 0},
		{"1", "ms", "5", "0", "2,5", "1", "0", "1", 0},
		{"1", "ms", "5", "1", "2,5", "1", "Renew", "1", 0},
		{"1", "ms", "5", "acquire", "2,5", "1", "release ", "1", 0},
		{"1", "ms", "5", "0", "2,5,6", "1", "0", "", 0},
		{"1", "ms", "5", "0", "1000001,5", "1", "0", "", 0},
		{"1", "ms", "5", "0", "2,0", "1", "0", "", 0},
		{"1", "ms", "5", "0", "2,4503599627370497", "1", "0", "", 0},
	} {
		f.Add(s.count1, s.unit, s.now, s.mode1, s.limits, s.count2, s.mode2, s.lease2, s.step, testKey)
	}
	f.Fuzz(func(t *testing.T, count1, unit, now, mode1, limits, count2, mode2, lease2 string, step int64, key string) {
		in := fuzzInput{count1, unit, now, mode1, limits, count2, step, key}
		fc := &fuzzCase{t: t, ft: ft, src: latest.Source, in: in, e: frozenEngine()}
		fc.ft.accepts = acceptsCallerID(ft.accepts, fc)
		lim := fuzzSplitLimits(limits)
		argv1 := append([]string{count1, unit, now, mode1}, lim...)
		argv2 := append([]string{count2, unit, fc.secondNow(), mode2}, lim...)
		if lease2 != "" {
			argv2 = append(argv2, lease2)
		}
		for _, argv := range [][]string{argv1, argv2} {
			if ft.accepts(ft.name, []string{key}, argv) && ft.tooSlow(argv) {
				t.Skipf("ARGV %q is too slow for luatest", argv)
			}
		}
		fc.call(1, argv1)
		fc.call(2, argv2)
	})
}

// TestConcurrencyShapeCanFail: the reply checks of the fuzz target refuse
// replies that break the contract.
func TestConcurrencyShapeCanFail(t *testing.T) {
	for _, c := range []struct {
		argv  []string
		reply []int64
	}{
		{[]string{"1", "ms", "5", "0", "2", "5"}, []int64{1, 1, 0, 5, 0}},                 // no lease id
		{[]string{"1", "ms", "5", "0", "2", "5"}, []int64{0, 3, 4, 5, 1}},                 // remaining > max
		{[]string{"0", "ms", "5", "0", "2", "5"}, []int64{1, 1, 0, 5, 2}},                 // a decision's index
		{[]string{"-1", "ms", "5", "0", "2", "5"}, []int64{1, 1, 0, 0, 0}},                // reset: not max
		{[]string{"1", "ms", "5", "renew", "2", "5", "7"}, []int64{1, 1, 0, 5, 6}},        // another id
		{[]string{"1", "ms", "5", "release", "2", "5", "7"}, []int64{0, 1, 3, 5, 0}},      // lost, not -1
		{[]string{"1", "ms", "5", "release", "2", "5", "7"}, []int64{1, 1, 2, 5, 7}},      // retry when allowed
		{[]string{"1", "ms", "5", "0", "2", "5"}, []int64{1, 1, 0, model.MaxTime + 1, 1}}, // reset_after
	} {
		if concurrencyShape(c.argv, c.reply) == "" {
			t.Errorf("ARGV %q reply %v: accepted", c.argv, c.reply)
		}
	}
	if p := concurrencyShape([]string{"1", "ms", "5", "renew", "2", "5", "7"}, []int64{1, 1, 0, 5, 7}); p != "" {
		t.Errorf("a good renewal refused: %s", p)
	}
}

// acceptsCallerID is the contract of v6's concurrency acquire on top of
// accepts: in mode '0' an optional ARGV[7], the caller's lease id (a
// canonical integer in [1, 2^52]), refused for an acquire (eventCount >
// 0) when a live lease holds that id, which fc's model tells.
func acceptsCallerID(accepts func(name string, keys, argv []string) bool, fc *fuzzCase) func(name string, keys, argv []string) bool {
	return func(name string, keys, argv []string) bool {
		if len(argv) != 7 || argv[3] != "0" {
			return accepts(name, keys, argv)
		}
		id, err := strconv.ParseInt(argv[6], 10, 64)
		if err != nil || id < 1 || id > model.MaxTime || strconv.FormatInt(id, 10) != argv[6] || !accepts(name, keys, argv[:6]) {
			return false
		}
		count, _ := strconv.ParseInt(argv[0], 10, 64)
		m, ok := fc.m.(*model.Concurrency)
		if count <= 0 || !ok {
			return true
		}
		c := model.Call{Count: count, Unit: argv[1], Lease: id}
		if argv[2] == "" {
			c.Now, _ = fc.unitNow(argv[1])
		} else {
			c.Now, _ = strconv.ParseInt(argv[2], 10, 64)
		}
		return !m.Holds(c)
	}
}
