package ratelua

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/luatest"
)

// concurrencyStep is one call of the concurrency script in seconds with
// max 2 and a lease of 30 s: eventCount, now, mode, lease id ("" in mode
// 0) and the reply it must get.
type concurrencyStep struct {
	count int64
	now   int64
	mode  string
	id    string
	want  []int64
}

func concurrencyArgs(s concurrencyStep, limits ...string) []string {
	args := append([]string{strconv.FormatInt(s.count, 10), "s", strconv.FormatInt(s.now, 10), s.mode}, limits...)
	if s.id != "" {
		args = append(args, s.id)
	}
	return args
}

// TestConcurrencyLogins works the "2 concurrent logins per account" case by
// hand (lua/README.md shows the same calls): the replies, and the TTL that
// follows the latest expiry and never shortens.
func TestConcurrencyLogins(t *testing.T) {
	e := frozenEngine()
	src := source(t, Concurrency)
	steps := []struct {
		concurrencyStep
		ttl int64 // the PTTL after the call, ms
	}{
		{concurrencyStep{1, 1000, "0", "", ints64(1, 1, 0, 30, 1)}, 30000},           // lease 1 until 1030
		{concurrencyStep{1, 1010, "0", "", ints64(1, 0, 0, 30, 2)}, 30000},           // lease 2 until 1040
		{concurrencyStep{1, 1015, "0", "", ints64(0, 0, 15, 25, 1)}, 30000},          // full: lease 1 ends in 15 s
		{concurrencyStep{0, 1015, "0", "", ints64(0, 0, 15, 25, 1)}, 30000},          // a decision, the same
		{concurrencyStep{1, 1020, "renew", "1", ints64(1, 0, 0, 30, 1)}, 30000},      // lease 1 until 1050
		{concurrencyStep{1, 1025, "release", "2", ints64(1, 1, 0, 25, 2)}, 30000},    // lease 2 back
		{concurrencyStep{1, 1025, "release", "2", ints64(0, 1, -1, 25, 0)}, 30000},   // not held any more
		{concurrencyStep{2, 1026, "0", "", ints64(0, 1, 24, 24, 1)}, 30000},          // 2 slots: lease 1 must end
		{concurrencyStep{1, 1050, "renew", "1", ints64(0, 2, -1, 0, 0)}, 30000},      // expired at 1050
		{concurrencyStep{2, 1050, "0", "", ints64(1, 0, 0, 30, 3)}, 30000},           // lease 3 of 2 slots
		{concurrencyStep{1, 1051, "renew", "3", ints64(0, 0, -1, 29, 0)}, 30000},     // other slots
		{concurrencyStep{2, 1051, "renew", "3", ints64(1, 0, 0, 30, 3)}, 30000},      // until 1081
		{concurrencyStep{-1, 1052, "0", "", ints64(1, 2, 0, 0, 0)}, 30000},           // every lease dropped
		{concurrencyStep{2, 1052, "renew", "3", ints64(0, 2, -1, 0, 0)}, 30000},      // lost to the reset
		{concurrencyStep{1, 1053, "0", "", ints64(1, 1, 0, 30, 4)}, 30000},           // ids go on: 4
		{concurrencyStep{1, 1053, "release", "4", ints64(1, 2, 0, 0, 4)}, 30000},     // none held
		{concurrencyStep{3, 1054, "0", "", ints64(0, 2, -1, 0, 1)}, 30000},           // more than max: never
		{concurrencyStep{1, 1054, "release", "99", ints64(0, 2, -1, 0, 0)}, 30000},   // never handed out
		{concurrencyStep{1, 1000, "0", "", ints64(1, 1, 0, 30, 5)}, 30000},           // a clock behind
		{concurrencyStep{1, 1000, "release", "5", ints64(1, 2, 0, 0, 5)}, 30000},     //
		{concurrencyStep{1000001, 1060, "0", "", ints64(0, 2, -1, 0, 1)}, 30000},     // any count is an acquire
		{concurrencyStep{1, 1061, "renew", "100000", ints64(0, 2, -1, 0, 0)}, 30000}, //
	}
	for i, s := range steps {
		args := concurrencyArgs(s.concurrencyStep, "2", "30")
		got, _, err := run(t, e, src, args)
		if err != nil {
			t.Fatalf("step %d %q: %v", i, args, err)
		}
		if !equalInts(got, s.want) {
			t.Fatalf("step %d %q: reply %v, want %v\nstate %v", i, args, got, s.want, e.Dump(testKey))
		}
		if pttl := e.PTTL(testKey); pttl != s.ttl {
			t.Fatalf("step %d %q: PTTL %d, want %d", i, args, pttl, s.ttl)
		}
	}
	// The members: the counter and the last write's time ('#' and '@'),
	// and lease 5's slot is gone.
	if got := e.Dump(testKey); len(got.([]luatest.ZMember)) != 2 {
		t.Errorf("state %v, want the counter and the last write's time alone", got)
	}
}

// TestConcurrencyTTLNeverShortens: a longer lease sets a longer TTL, which
// a later shorter lease, a release and a reset keep; a new key's TTL is its
// first lease's.
func TestConcurrencyTTLNeverShortens(t *testing.T) {
	e := frozenEngine()
	src := source(t, Concurrency)
	for i, c := range []struct {
		args []string
		ttl  int64
	}{
		{[]string{"1", "ms", "1000", "0", "5", "100"}, 100},
		{[]string{"1", "ms", "1000", "0", "5", "900"}, 900},
		{[]string{"1", "ms", "1001", "0", "5", "100"}, 900},
		{[]string{"1", "ms", "1001", "release", "5", "100", "2"}, 900},
		{[]string{"-1", "ms", "1002", "0", "5", "100"}, 900},
		{[]string{"1", "ms", "1003", "0", "5", "2000"}, 2000},
		{[]string{"1", "us", "1003", "0", "5", "2001"}, 2000}, // 2.001 ms rounded up is 3 ms: shorter
	} {
		if _, _, err := run(t, e, src, c.args); err != nil {
			t.Fatalf("call %d %q: %v", i, c.args, err)
		}
		if pttl := e.PTTL(testKey); pttl != c.ttl {
			t.Errorf("call %d %q: PTTL %d, want %d", i, c.args, pttl, c.ttl)
		}
	}
}

// TestConcurrencyValidation: each kind of bad input is refused with an
// error naming the argument, and writes nothing.
func TestConcurrencyValidation(t *testing.T) {
	src := source(t, Concurrency)
	good := []string{"1", "s", "1000", "0", "2", "30"}
	cases := []struct {
		argv []string
		text string
	}{
		{[]string{"x", "s", "1000", "0", "2", "30"}, "ARGV[1] eventCount must be a canonical integer in [-2^52, 2^52], got 'x'"},
		{[]string{"-0", "s", "1000", "0", "2", "30"}, "ARGV[1] eventCount"},
		{[]string{"1", "sec", "1000", "0", "2", "30"}, "ARGV[2] unit must be 's', 'ms' or 'us', got 'sec'"},
		{[]string{"1", "s", "01000", "0", "2", "30"}, "ARGV[3] now"},
		{[]string{"1", "s", "1000", "1", "2", "30"}, "ARGV[4] mode must be '0' (acquire), 'renew' or 'release', got '1'"},
		{[]string{"1", "s", "1000", "Renew", "2", "30", "1"}, "ARGV[4] mode"},
		{[]string{"1", "s", "1000", "\x00", "2", "30"}, `ARGV[4] mode must be '0' (acquire), 'renew' or 'release', got '\x00'`},
		{[]string{"0", "s", "1000", "renew", "2", "30", "1"}, "ARGV[1] eventCount must be the slots of the lease, an integer in [1, 10^6], in mode renew, got '0'"},
		{[]string{"1000001", "s", "1000", "release", "2", "30", "1"}, "ARGV[1] eventCount must be the slots of the lease"},
		{[]string{"1", "s", "1000", "0", "2"}, "expected 2 or 3 arguments after ARGV[4] in mode '0' (max, lease, and the caller's lease id), got 1"},
		{[]string{"1", "s", "1000", "0", "2", "30", "7", "1"}, "expected 2 or 3 arguments after ARGV[4] in mode '0' (max, lease, and the caller's lease id), got 4"},
		{[]string{"1", "s", "1000", "0", "2", "30", "1"}, "ARGV[7] the lease id is held by a live lease: choose another, got '1'"},
		{[]string{"1", "s", "1000", "0", "2", "30", "0"}, "ARGV[7] the lease id must be a canonical integer in [1, 2^52], got '0'"},
		{[]string{"0", "s", "1000", "0", "2", "30", "x"}, "ARGV[7] the lease id must be"},
		{[]string{"1", "s", "1000", "renew", "2", "30"}, "expected 3 arguments after ARGV[4] in mode 'renew' (max, lease, lease id), got 2"},
		{[]string{"1", "s", "1000", "release", "2", "30", "1", "1"}, "expected 3 arguments after ARGV[4] in mode 'release'"},
		{[]string{"1", "s", "1000", "0", "0", "30"}, "ARGV[5] max must be a canonical integer in [1, 10^6], got '0'"},
		{[]string{"1", "s", "1000", "0", "1000001", "30"}, "ARGV[5] max"},
		{[]string{"1", "s", "1000", "0", "2", "0"}, "ARGV[6] lease must be a canonical integer in [1, 2^52], got '0'"},
		{[]string{"1", "s", "1000", "0", "2", "1e3"}, "ARGV[6] lease"},
		{[]string{"-1", "s", "1000", "0", "2", "x"}, "ARGV[6] lease"}, // a reset checks its arguments too
		{[]string{"1", "s", "1000", "renew", "2", "30", "0"}, "ARGV[7] the lease id must be a canonical integer in [1, 2^52], got '0'"},
		{[]string{"1", "s", "1000", "release", "2", "30", "-1"}, "ARGV[7] the lease id"},
		{[]string{"1", "s", "1000", "release", "2", "30", strings.Repeat("9", 50)}, "got '" + strings.Repeat("9", 40) + "...'"},
	}
	e := frozenEngine()
	if _, _, err := run(t, e, src, good); err != nil {
		t.Fatal(err)
	}
	before, ttl := e.Dump(testKey), e.PTTL(testKey)
	for _, c := range cases {
		_, _, err := run(t, e, src, c.argv)
		if err == nil {
			t.Errorf("ARGV %q: no error, want %q", c.argv, c.text)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "ERR ratelua: ") || !strings.Contains(msg, c.text) {
			t.Errorf("ARGV %q: error %q, want it to start with \"ERR ratelua: \" and contain %q", c.argv, msg, c.text)
		}
		if after := e.Dump(testKey); !equalDump(before, after) || e.PTTL(testKey) != ttl {
			t.Errorf("ARGV %q changed the state: %v (TTL %d) -> %v (TTL %d)", c.argv, before, ttl, after, e.PTTL(testKey))
		}
	}
	for _, keys := range [][]string{{testKey, testKey + "2"}, {}} {
		res, err := e.Run(src, keys, good)
		if err == nil || !strings.Contains(err.Error(), "ERR ratelua: expected exactly 1 key") {
			t.Errorf("KEYS %q: %v, %v", keys, res, err)
		}
	}
}

// TestConcurrencyServerClock: an empty now reads TIME in the unit and
// decides as the same time given by the caller.
func TestConcurrencyServerClock(t *testing.T) {
	src := source(t, Concurrency)
	for _, unit := range []string{"s", "ms", "us"} {
		server, caller := frozenEngine(), frozenEngine()
		now := map[string]string{"s": "1700000000", "ms": "1700000000000", "us": "1700000000000000"}[unit]
		for i, mode := range []string{"0", "0", "0", "renew", "release"} {
			extra := []string{}
			if mode != "0" {
				extra = []string{"1"}
			}
			a, res, err := run(t, server, src, append([]string{"1", unit, "", mode, "2", "5000000"}, extra...))
			if err != nil {
				t.Fatal(err)
			}
			if res.Count("TIME") != 1 {
				t.Errorf("%s call %d: %d TIME calls", unit, i, res.Count("TIME"))
			}
			b, _, err := run(t, caller, src, append([]string{"1", unit, now, mode, "2", "5000000"}, extra...))
			if err != nil {
				t.Fatal(err)
			}
			if !equalInts(a, b) {
				t.Errorf("%s call %d: server clock %v, caller clock %v", unit, i, a, b)
			}
		}
	}
}

// TestConcurrencyManySlots: a lease of more slots than one command takes
// is written, renewed and released whole.
func TestConcurrencyManySlots(t *testing.T) {
	e := frozenEngine()
	src := source(t, Concurrency)
	for i, c := range []struct {
		args []string
		want []int64
	}{
		{[]string{"2500", "ms", "10", "0", "3000", "100"}, ints64(1, 500, 0, 100, 1)},
		{[]string{"501", "ms", "10", "0", "3000", "100"}, ints64(0, 500, 100, 100, 1)},
		{[]string{"2500", "ms", "20", "renew", "3000", "100", "1"}, ints64(1, 500, 0, 100, 1)},
		{[]string{"2499", "ms", "20", "release", "3000", "100", "1"}, ints64(0, 500, -1, 100, 0)},
		{[]string{"2500", "ms", "20", "release", "3000", "100", "1"}, ints64(1, 3000, 0, 0, 1)},
	} {
		got, res, err := run(t, e, src, c.args)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if !equalInts(got, c.want) {
			t.Fatalf("call %d %q: %v, want %v", i, c.args[:4], got, c.want)
		}
		if i == 0 && res.Count("ZADD") != 4 {
			t.Errorf("2500 slots took %d ZADDs, want 3 (1000 members each) and the counter's", res.Count("ZADD"))
		}
	}
}
