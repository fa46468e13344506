package ratelua

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua/luatest"
)

// loginLimits is seed 002's login case in each script's terms: at most 1
// per 5 s and 5 per hour (token_bucket: a bucket of 1 refilled every 5 s and
// a bucket of 5 refilled one per 720 s).
var loginLimits = map[string][]string{
	SlidingWindow: {"1", "5", "1", "5", "3600", "600"},
	AR1:           {"1", "2000", "5", "5", "2000", "3600"},
	ZSetLog:       {"1", "5", "5", "3600"},
	TokenBucket:   {"1", "1", "5", "5", "1", "720"},
}

type step struct {
	count int64
	now   int64
	mode  int
	want  []int64
}

func replay(t *testing.T, name string, steps []step) *luatest.Engine {
	t.Helper()
	e := frozenEngine()
	src := source(t, name)
	for i, s := range steps {
		args := append([]string{strconv.FormatInt(s.count, 10), "s", strconv.FormatInt(s.now, 10), strconv.Itoa(s.mode)}, loginLimits[name]...)
		got, _, err := run(t, e, src, args)
		if err != nil {
			t.Fatalf("step %d %v: %v", i, args[:4], err)
		}
		if !equalInts(got, s.want) {
			t.Fatalf("step %d %v: reply %v, want %v", i, args[:4], got, s.want)
		}
	}
	return e
}

// The login case worked by hand (the README shows the same calls).
func TestLoginCaseSlidingWindow(t *testing.T) {
	replay(t, SlidingWindow, []step{
		{1, 1000, 0, ints64(1, 0, 0, 3200, 1)},    // bucket 1000 of limit 1, bucket 1 (600..1199) of limit 2
		{1, 1002, 0, ints64(0, 0, 3, 3198, 1)},    // 1 per 5 s: bucket 1000 leaves the window at 1005
		{0, 1004, 0, ints64(0, 0, 1, 3196, 1)},    // a peek: one event would pass in 1 s
		{1, 1005, 0, ints64(1, 0, 0, 3195, 1)},    // 2 of 5 this hour
		{1, 1010, 0, ints64(1, 0, 0, 3190, 1)},    // 3
		{1, 1015, 0, ints64(1, 0, 0, 3185, 1)},    // 4
		{1, 1020, 0, ints64(1, 0, 0, 3180, 1)},    // 5: limit 1 and 2 both have 0 left; lower index wins
		{1, 1025, 0, ints64(0, 0, 3175, 3175, 2)}, // 5 per hour: bucket 1 leaves at 600+3600 = 4200
		{2, 1030, 0, ints64(0, 0, -1, 3170, 1)},   // 2 events can never pass 1 per 5 s
		{-1, 1031, 0, ints64(1, 1, 0, 0, 0)},      // reset
		{1, 1032, 0, ints64(1, 0, 0, 3168, 1)},    // fresh again
	})
}

func TestLoginCaseZSetLog(t *testing.T) {
	replay(t, ZSetLog, []step{
		{1, 1000, 0, ints64(1, 0, 0, 3600, 1)},
		{1, 1002, 0, ints64(0, 0, 3, 3598, 1)}, // the event at 1000 leaves (1002-5, ...] at 1005
		{1, 1005, 0, ints64(1, 0, 0, 3600, 1)},
		{1, 1010, 0, ints64(1, 0, 0, 3600, 1)},
		{1, 1015, 0, ints64(1, 0, 0, 3600, 1)},
		{1, 1020, 0, ints64(1, 0, 0, 3600, 1)},
		{1, 1025, 0, ints64(0, 0, 3575, 3595, 2)}, // the oldest of 5, at 1000, leaves at 4600
		{1, 1026, 1, ints64(0, 0, 3579, 3600, 2)}, // mode 1 records the denied attempt: now 1005 must leave
		{-5, 1027, 0, ints64(1, 1, 0, 0, 0)},
	})
}

func TestLoginCaseTokenBucket(t *testing.T) {
	replay(t, TokenBucket, []step{
		{1, 1000, 0, ints64(1, 0, 0, 720, 1)},  // bucket 1 empty (refills in 5 s), bucket 2 has 4
		{1, 1002, 0, ints64(0, 0, 3, 718, 1)},  // 3 s until bucket 1 has a token again
		{1, 1005, 0, ints64(1, 0, 0, 1435, 1)}, // bucket 2: 3 left + 5/720 of a token
		{1, 1010, 0, ints64(1, 0, 0, 2150, 1)},
		{1, 1015, 0, ints64(1, 0, 0, 2865, 1)},
		{1, 1020, 0, ints64(1, 0, 0, 3580, 1)}, // bucket 2 has 20/720 of a token
		{1, 1025, 0, ints64(0, 0, 695, 3575, 2)},
		{1, 1026, 1, ints64(0, 0, 1414, 4294, 2)}, // mode 1 takes the token anyway: bucket 2 at -694/720
		{-1, 1027, 0, ints64(1, 1, 0, 0, 0)},
	})
}

func TestLoginCaseAR1(t *testing.T) {
	replay(t, AR1, []step{
		// Counts halve at every 5 s (limit 1) and 3600 s (limit 2) boundary;
		// a count below 0.001 is 0: 1 becomes 2^-10 after 10 halvings, so
		// a count of 1 is gone 10 boundaries after the slot it was added in.
		{1, 1000, 0, ints64(1, 0, 0, 3600*10-1000, 1)},
		{1, 1002, 0, ints64(0, 0, 48, 3600*10-1002, 1)}, // max 1 needs the count fully decayed: 1050
		{0, 1004, 0, ints64(0, 0, 46, 3600*10-1004, 1)},
		{1, 1050, 0, ints64(1, 0, 0, 3600*11-1050, 1)},  // limit 2 holds 2: below 0.001 after 11 halvings
		{1, 1100, 1, ints64(1, 0, 0, 3600*12-1100, 1)},  // 3 in limit 2: 12 halvings
		{2, 1150, 1, ints64(0, 0, -1, 3600*13-1150, 1)}, // 2 > max 1: never; mode 1 records anyway
		{-1, 1151, 0, ints64(1, 1, 0, 0, 0)},
	})
}

// TestValidation sends each kind of bad input to every script: the error
// names the argument, and nothing is written (a previous state, TTL and all,
// is left exactly as it was).
func TestValidation(t *testing.T) {
	type bad struct {
		argv []string // nil entries mean "keep the good value"
		text string
	}
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		t.Run(name, func(t *testing.T) {
			src := source(t, name)
			good := append([]string{"1", "s", "1000", "0"}, loginLimits[name]...)
			cases := []bad{
				{[]string{"x"}, "ARGV[1] eventCount must be a canonical integer"},
				{[]string{"-0"}, "ARGV[1] eventCount"},
				{[]string{"+1"}, "ARGV[1] eventCount"},
				{[]string{"01"}, "ARGV[1] eventCount"},
				{[]string{"1\x00"}, "ARGV[1] eventCount must be a canonical integer in [-2^52, 2^52], got '1\\x00'"},
				{[]string{"1.5"}, "ARGV[1] eventCount"},
				{[]string{"0x10"}, "ARGV[1] eventCount"},
				{[]string{" 1"}, "ARGV[1] eventCount"},
				{[]string{"1e3"}, "ARGV[1] eventCount"},
				{[]string{"4503599627370497"}, "ARGV[1] eventCount"},
				{[]string{""}, "ARGV[1] eventCount"},
				{[]string{"1", "sec"}, "ARGV[2] unit must be 's', 'ms' or 'us', got 'sec'"},
				{[]string{"1", "S"}, "ARGV[2] unit"},
				{[]string{"1", "s", "-5"}, "ARGV[3] now must be empty (server clock) or a canonical integer in [0, 2^52], got '-5'"},
				{[]string{"1", "s", "01000"}, "ARGV[3] now"},
				{[]string{"1", "s", "-0"}, "ARGV[3] now"},
				{[]string{"1", "s", "12.5"}, "ARGV[3] now"},
				{[]string{"1", "s", "4503599627370497"}, "ARGV[3] now"},
				{[]string{"1", "s", "1000", "2"}, "ARGV[4] mode must be '0'"},
				{[]string{"1", "s", "1000", ""}, "ARGV[4] mode"},
				{[]string{"1", "s", "1000", "0"}, "expected 1 to 16 limits"},
				{append([]string{"1", "s", "1000", "0"}, loginLimits[name][:len(loginLimits[name])-1]...), "expected 1 to 16 limits"},
				{append([]string{"1", "s", "1000", "0"}, repeat(loginLimits[name][:len(loginLimits[name])/2], 17)...), "expected 1 to 16 limits"},
				{append([]string{"1", "s", "1000", "0", "0"}, loginLimits[name][1:]...), "ARGV[5] (limit 1 "},
				{append([]string{"1", "s", "1000", "0", "-1"}, loginLimits[name][1:]...), "ARGV[5] (limit 1 "},
				{append([]string{"1", "s", "1000", "0", "0" + loginLimits[name][0]}, loginLimits[name][1:]...), "ARGV[5] (limit 1 "},
			}
			limitArgs := loginLimits[name]
			last := make([]string, len(limitArgs))
			copy(last, limitArgs)
			last[len(last)-1] = "x"
			cases = append(cases, bad{append([]string{"1", "s", "1000", "0"}, last...),
				"ARGV[" + strconv.Itoa(4+len(limitArgs)) + "] (limit 2 "})
			switch name {
			case SlidingWindow:
				cases = append(cases,
					bad{[]string{"1", "s", "1000", "0", "1", "5", "6"}, "limit 1: resolution must be at most duration, got 6 > 5"},
					bad{[]string{"1", "s", "1000", "0", "1", "10001", "1"}, "limit 1: duration / resolution must be at most 10000 buckets, got 10001"},
					bad{[]string{"1", "s", "1000", "0", "1000000001", "5", "1"}, "(limit 1 max) must be a canonical integer in [1, 10^9]"},
					// The second of two limits, checked on a key written
					// for other limits (the general path's check).
					bad{[]string{"1", "s", "1000", "0", "1", "5", "1", "1", "10001", "1"}, "limit 2: duration / resolution must be at most 10000 buckets, got 10001"})
			case AR1:
				cases = append(cases,
					bad{[]string{"1", "s", "1000", "0", "1", "1000", "5"}, "(limit 1 decay) must be a canonical integer in [1001, 10^9]"},
					bad{[]string{"1", "s", "1000", "0", "1", "2000", "5", "1", "1000", "5"}, "(limit 2 decay) must be a canonical integer in [1001, 10^9]"})
			case ZSetLog:
				cases = append(cases,
					bad{[]string{"1", "s", "1000", "0", "10001", "5"}, "(limit 1 max) must be a canonical integer in [1, 10^4]"},
					bad{[]string{"1", "s", "1000", "0", "5", "5", "10001", "5"}, "(limit 2 max) must be a canonical integer in [1, 10^4]"},
					bad{[]string{"1", "s", "1000", "0", "5", "5", "5", "4503599627370497"}, "(limit 2 window) must be a canonical integer in [1, 2^52]"},
					bad{[]string{"1", "s", "1000", "0", "5", "5", "5", "05"}, "(limit 2 window) must be a canonical integer in [1, 2^52]"})
			case TokenBucket:
				cases = append(cases,
					bad{[]string{"1", "s", "1000", "0", "1000000", "1", "1125899906843"}, "limit 1: capacity * refill_interval must be at most 2^50"},
					bad{[]string{"1", "s", "1000", "0", "1", "1", "5", "1000000", "1", "1125899906843"}, "limit 2: capacity * refill_interval must be at most 2^50"})
			}
			e := frozenEngine()
			if _, _, err := run(t, e, src, good); err != nil {
				t.Fatal(err)
			}
			before, ttl := e.Dump(testKey), e.PTTL(testKey)
			for _, c := range cases {
				argv := c.argv
				if len(argv) < 4 {
					argv = append(append([]string{}, argv...), good[len(argv):]...)
				}
				_, _, err := run(t, e, src, argv)
				if err == nil {
					t.Errorf("ARGV %q: no error, want %q", argv, c.text)
					continue
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, "ERR ratelua: ") || !strings.Contains(msg, c.text) {
					t.Errorf("ARGV %q: error %q, want it to start with \"ERR ratelua: \" and contain %q", argv, msg, c.text)
				}
				if after := e.Dump(testKey); !equalDump(before, after) || e.PTTL(testKey) != ttl {
					t.Errorf("ARGV %q changed the state: %v (TTL %d) -> %v (TTL %d)", argv, before, ttl, after, e.PTTL(testKey))
				}
			}
			// Two keys, or none.
			for _, keys := range [][]string{{testKey, testKey + "2"}, {}} {
				res, err := e.Run(src, keys, good)
				if err == nil || !strings.Contains(err.Error(), "ERR ratelua: expected exactly 1 key") {
					t.Errorf("KEYS %q: %v, %v", keys, res, err)
				}
			}
		})
	}
}

func repeat(xs []string, n int) []string {
	var out []string
	for range n {
		out = append(out, xs...)
	}
	return out
}

func equalDump(a, b any) bool { return reflect.DeepEqual(a, b) }

// TestServerClock checks that an empty now reads TIME in the call's unit
// and decides exactly as the same time given by the caller.
func TestServerClock(t *testing.T) {
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		for _, unit := range []string{"s", "ms", "us"} {
			src := source(t, name)
			at := time.Unix(1_700_000_123, 456_789_000)
			server := luatest.New(luatest.Options{Now: at})
			caller := luatest.New(luatest.Options{Now: at})
			var now int64
			switch unit {
			case "s":
				now = at.Unix()
			case "ms":
				now = at.UnixMilli()
			case "us":
				now = at.UnixMicro()
			}
			limits := scaleLimits(name, loginLimits[name], unit)
			for i := range 4 {
				a, res, err := run(t, server, src, append([]string{"1", unit, "", "0"}, limits...))
				if err != nil {
					t.Fatal(err)
				}
				if res.Count("TIME") != 1 {
					t.Errorf("%s %s: server clock used %d TIME calls", name, unit, res.Count("TIME"))
				}
				b, res, err := run(t, caller, src, append([]string{"1", unit, strconv.FormatInt(now, 10), "0"}, limits...))
				if err != nil {
					t.Fatal(err)
				}
				if res.Count("TIME") != 0 {
					t.Errorf("%s %s: caller clock used TIME", name, unit)
				}
				if !equalInts(a, b) {
					t.Errorf("%s %s call %d: server clock %v, caller clock %v", name, unit, i, a, b)
				}
			}
		}
	}
}

// scaleLimits converts the durations of login limits given in seconds.
func scaleLimits(name string, limits []string, unit string) []string {
	factor := map[string]int64{"s": 1, "ms": 1000, "us": 1_000_000}[unit]
	durations := map[string][]bool{
		SlidingWindow: {false, true, true},
		AR1:           {false, false, true},
		ZSetLog:       {false, true},
		TokenBucket:   {false, false, true},
	}[name]
	out := make([]string, len(limits))
	for i, v := range limits {
		out[i] = v
		if durations[i%len(durations)] {
			n, _ := strconv.ParseInt(v, 10, 64)
			out[i] = strconv.FormatInt(n*factor, 10)
		}
	}
	return out
}

// TestClockBehind defines what a caller clock behind the state's last write
// means: the call is decided at the time of that write, so the state never
// moves back in time, and retry_after and reset_after are measured from the
// caller's own now (they grow by the lag).
func TestClockBehind(t *testing.T) {
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		t.Run(name, func(t *testing.T) {
			src := source(t, name)
			limits := loginLimits[name]
			call := func(e *luatest.Engine, count, now int64) []int64 {
				got, _, err := run(t, e, src, append([]string{strconv.FormatInt(count, 10), "s", strconv.FormatInt(now, 10), "0"}, limits...))
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			behind, onTime := frozenEngine(), frozenEngine()
			call(behind, 1, 1000)
			call(onTime, 1, 1000)
			lagged := call(behind, 1, 900) // 100 s behind: judged at 1000
			exact := call(onTime, 1, 1000)
			if lagged[0] != exact[0] || lagged[1] != exact[1] || lagged[4] != exact[4] {
				t.Fatalf("clock behind: %v, on time: %v", lagged, exact)
			}
			if exact[2] > 0 && lagged[2]-exact[2] != 100 {
				t.Errorf("retry_after behind %v, on time %v: want the 100 s lag added", lagged, exact)
			}
			if exact[3] > 0 && lagged[3]-exact[3] != 100 {
				t.Errorf("reset_after behind %v, on time %v: want the 100 s lag added", lagged, exact)
			}
			if !equalDump(behind.Dump(testKey), onTime.Dump(testKey)) {
				t.Errorf("states differ: behind %v, on time %v", behind.Dump(testKey), onTime.Dump(testKey))
			}
			// Both engines hold the same state: later calls agree.
			for _, now := range []int64{1001, 1006, 2000, 5000} {
				if a, b := call(behind, 1, now), call(onTime, 1, now); !equalInts(a, b) {
					t.Errorf("at %d after the lagged call: %v vs %v", now, a, b)
				}
			}
		})
	}
}

// TestPeekWritesNothing: eventCount 0 never creates or changes state.
func TestPeekWritesNothing(t *testing.T) {
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		src := source(t, name)
		e := frozenEngine()
		args := func(count, now string) []string {
			return append([]string{count, "s", now, "0"}, loginLimits[name]...)
		}
		got, res, err := run(t, e, src, args("0", "1000"))
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Keys()) != 0 || got[0] != 1 || got[3] != 0 {
			t.Errorf("%s: a peek on a fresh key answered %v and left keys %v", name, got, e.Keys())
		}
		onlyReads(t, name, res)
		if _, _, err := run(t, e, src, args("1", "1000")); err != nil {
			t.Fatal(err)
		}
		before, ttl := e.Dump(testKey), e.PTTL(testKey)
		for _, now := range []string{"1000", "1003", "1500", "999999"} {
			_, res, err := run(t, e, src, args("0", now))
			if err != nil {
				t.Fatal(err)
			}
			onlyReads(t, name, res)
		}
		if !equalDump(before, e.Dump(testKey)) || e.PTTL(testKey) != ttl {
			t.Errorf("%s: peeks changed the state", name)
		}
	}
}

func onlyReads(t *testing.T, name string, res *luatest.Result) {
	t.Helper()
	for _, c := range res.Trace {
		switch c.Name {
		case "GET", "HGET", "HMGET", "ZRANGE", "ZCOUNT":
		default:
			t.Errorf("%s: a peek called %s", name, c.Name)
		}
	}
}

// TestExpiryIsFresh runs a live clock: the TTL is reset_after, the key is
// gone once it has passed, and the next call answers exactly as on a
// never-used key.
func TestExpiryIsFresh(t *testing.T) {
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		for _, unit := range []string{"s", "ms", "us"} {
			src := source(t, name)
			e := luatest.New(luatest.Options{Now: time.Unix(1_700_000_000, 0)})
			limits := scaleLimits(name, loginLimits[name], unit)
			args := append([]string{"1", unit, "", "1"}, limits...)
			var reset int64
			for range 3 {
				got, _, err := run(t, e, src, args)
				if err != nil {
					t.Fatal(err)
				}
				reset = got[3]
			}
			per := map[string]time.Duration{"s": time.Second, "ms": time.Millisecond, "us": time.Microsecond}[unit]
			resetAfter := time.Duration(reset) * per
			wantTTL := int64((resetAfter + time.Millisecond - 1) / time.Millisecond)
			if got := e.PTTL(testKey); got != wantTTL {
				t.Errorf("%s %s: PTTL %d ms, want reset_after %d %s = %d ms", name, unit, got, reset, unit, wantTTL)
			}
			e.Advance(resetAfter - time.Millisecond)
			if e.Type(testKey) == "none" {
				t.Errorf("%s %s: the key expired before reset_after", name, unit)
			}
			e.Advance(2 * time.Millisecond)
			if e.Type(testKey) != "none" {
				t.Errorf("%s %s: the key outlived reset_after", name, unit)
			}
			got, _, err := run(t, e, src, args)
			if err != nil {
				t.Fatal(err)
			}
			fresh, _, err := run(t, luatest.New(luatest.Options{Now: e.Now()}), src, args)
			if err != nil {
				t.Fatal(err)
			}
			if !equalInts(got, fresh) {
				t.Errorf("%s %s: after expiry %v, fresh key %v", name, unit, got, fresh)
			}
		}
	}
}
