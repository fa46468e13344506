package ratelua

import (
	"strings"
	"testing"
	"time"
)

// TestConcurrencyClockBehind: a now behind the key's last acquire counts
// as that acquire's time, so a caller 20 s behind holds its lease as long
// as the others count it: Max 2 never has 3 holders (issue 30 row M4).
func TestConcurrencyClockBehind(t *testing.T) {
	e := frozenEngine()
	src := source(t, Concurrency)
	for i, s := range []concurrencyStep{
		{1, 1000, "0", "", ints64(1, 1, 0, 30, 1)},
		{1, 980, "0", "", ints64(1, 0, 0, 30, 2)}, // 20 s behind: decided at 1000, held until 1030
		{1, 1015, "0", "", ints64(0, 0, 15, 15, 1)},
		{1, 1029, "renew", "2", ints64(1, 0, 0, 30, 2)},
		{1, 1009, "0", "", ints64(0, 0, 1, 30, 1)}, // 20 s behind the renewal
	} {
		args := concurrencyArgs(s, "2", "30")
		got, _, err := run(t, e, src, args)
		if err != nil || !equalInts(got, s.want) {
			t.Fatalf("step %d %q: %v %v, want %v\nstate %v", i, args, got, err, s.want, e.Dump(testKey))
		}
	}
}

// TestConcurrencyClockAhead: a caller clock an hour ahead of the server's
// (TIME) evicts no live lease and gets none beyond max; a clock at year
// 9999 holds the key no longer than the lease time, on a fresh key and on
// a key in use (issue 30 rows M4 and M5).
func TestConcurrencyClockAhead(t *testing.T) {
	src := source(t, Concurrency)
	server := frozenEngine().Now().Unix()
	at := func(d int64) int64 { return server + d }

	e := frozenEngine()
	for i, s := range []concurrencyStep{
		{1, at(0), "0", "", ints64(1, 1, 0, 30, 1)},
		{1, at(5), "0", "", ints64(1, 0, 0, 30, 2)},     // 5 s ahead: within a lease time of the last write
		{1, at(3600), "0", "", ints64(0, 0, 30, 35, 1)}, // an hour ahead: decided at TIME
		{1, at(3600), "renew", "1", ints64(1, 0, 0, 35, 1)},
	} {
		args := concurrencyArgs(s, "2", "30")
		got, _, err := run(t, e, src, args)
		if err != nil || !equalInts(got, s.want) {
			t.Fatalf("ahead: step %d %q: %v %v, want %v\nstate %v", i, args, got, err, s.want, e.Dump(testKey))
		}
	}

	const year9999 = 253402300799
	for _, inUse := range []bool{false, true} {
		e := frozenEngine()
		if inUse {
			if got, _, err := run(t, e, src, concurrencyArgs(concurrencyStep{1, at(0), "0", "", nil}, "1", "30")); err != nil || got[0] != 1 {
				t.Fatalf("%v %v", got, err)
			}
			if got, _, err := run(t, e, src, concurrencyArgs(concurrencyStep{1, at(0), "release", "1", nil}, "1", "30")); err != nil || got[0] != 1 {
				t.Fatalf("%v %v", got, err)
			}
		}
		got, _, err := run(t, e, src, concurrencyArgs(concurrencyStep{1, year9999, "0", "", nil}, "1", "30"))
		if err != nil || got[0] != 1 || got[3] != 30 {
			t.Fatalf("in use %v: year 9999: %v %v, want a lease of 30 s from TIME", inUse, got, err)
		}
		if pttl := e.PTTL(testKey); pttl <= 0 || pttl > 30_000 {
			t.Fatalf("in use %v: PTTL %d after a call at year 9999, want at most the lease, 30 s", inUse, pttl)
		}
		// The server clock: the slot is the year-9999 caller's for 30 s,
		// then free.
		server := []string{"1", "s", "", "0", "1", "30"}
		if got, _, err := run(t, e, src, server); err != nil || got[0] != 0 || got[2] != 30 {
			t.Fatalf("in use %v: server clock at once: %v %v, want denied for 30 s", inUse, got, err)
		}
		e.Advance(30 * time.Second)
		if got, _, err := run(t, e, src, server); err != nil || got[0] != 1 {
			t.Fatalf("in use %v: server clock 30 s later: %v %v, want a slot", inUse, got, err)
		}
	}
}

// TestConcurrencyRefusesOtherState: a key holding another script's state
// (a hash, a string, a sorted set without '#' and '@', such as zset_log's)
// is refused by every mode with ERR ratelua and left unchanged (issue 30
// row L2).
func TestConcurrencyRefusesOtherState(t *testing.T) {
	src := source(t, Concurrency)
	for _, state := range [][]string{
		{"HSET", testKey, "m", "1 2 3"},
		{"SET", testKey, "1000 0.5"},
		{"ZADD", testKey, "1000", "1000-1", "1001", "1001-1"},
		{"ZADD", testKey, "-5", "#x"},
	} {
		for _, args := range [][]string{
			{"1", "s", "1000", "0", "2", "30"},
			{"1", "s", "1000", "0", "2", "30", "77"},
			{"0", "s", "1000", "0", "2", "30"},
			{"-1", "s", "1000", "0", "2", "30"},
			{"1", "s", "", "0", "2", "30"},
			{"1", "s", "1000", "renew", "2", "30", "1"},
			{"1", "s", "1000", "release", "2", "30", "1"},
		} {
			e := frozenEngine()
			if _, err := e.Do(state...); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Do("PEXPIRE", testKey, "100000"); err != nil {
				t.Fatal(err)
			}
			before := e.Dump(testKey)
			_, _, err := run(t, e, src, args)
			if err == nil || !strings.HasPrefix(err.Error(), "ERR ratelua: KEYS[1] holds a ") || !strings.Contains(err.Error(), "not a concurrency state") {
				t.Errorf("%s state, ARGV %q: %v, want ERR ratelua naming the key's state", state[0], args, err)
			}
			if after := e.Dump(testKey); !equalDump(before, after) || e.PTTL(testKey) != 100000 {
				t.Errorf("%s state, ARGV %q: changed %v -> %v (PTTL %d)", state[0], args, before, after, e.PTTL(testKey))
			}
		}
	}
}

// TestConcurrencyCallerIDs: an acquire may name its lease id (ARGV[7]):
// the reply's limit_index is that id, renewals and releases name it, an
// id a live lease holds is refused with nothing written, and the counter
// skips the ids live leases hold (issue 30 row H3).
func TestConcurrencyCallerIDs(t *testing.T) {
	e := frozenEngine()
	src := source(t, Concurrency)
	for i, s := range []concurrencyStep{
		{1, 1000, "0", "2", ints64(1, 2, 0, 30, 2)},     // the caller's id 2
		{1, 1001, "0", "", ints64(1, 1, 0, 30, 1)},      // the counter's 1
		{1, 1002, "0", "", ints64(1, 0, 0, 30, 3)},      // the counter skips 2, held
		{1, 1003, "renew", "2", ints64(1, 0, 0, 30, 2)}, // held until 1033
		{1, 1004, "release", "2", ints64(1, 1, 0, 28, 2)},
		{1, 1005, "0", "2", ints64(1, 0, 0, 30, 2)}, // released: free again
		{1, 1006, "0", "4503599627370496", ints64(0, 0, 25, 29, 1)},
	} {
		args := concurrencyArgs(s, "3", "30")
		got, _, err := run(t, e, src, args)
		if err != nil || !equalInts(got, s.want) {
			t.Fatalf("step %d %q: %v %v, want %v\nstate %v", i, args, got, err, s.want, e.Dump(testKey))
		}
	}
	before, ttl := e.Dump(testKey), e.PTTL(testKey)
	for _, id := range []string{"1", "2", "3"} {
		_, _, err := run(t, e, src, []string{"1", "s", "1007", "0", "4", "30", id})
		if err == nil || !strings.Contains(err.Error(), "ERR ratelua: ARGV[7] the lease id is held by a live lease") {
			t.Errorf("an acquire of live lease %s's id: %v, want it refused", id, err)
		}
		if after := e.Dump(testKey); !equalDump(before, after) || e.PTTL(testKey) != ttl {
			t.Errorf("the refused acquire of id %s changed the state: %v -> %v", id, before, after)
		}
	}
}
