package ratelua

import (
	"errors"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/luatest"
)

// TestZSetLogMaxBoundRefusedByScript: zset_log v6 refuses a max above 10^4
// with one limit and with several, naming the argument, and writes
// nothing; at the bound, a call of eventCount 10^6 in mode 1 keeps max + 1
// members, and one of 10^4 in mode 0 is allowed and keeps 10^4.
func TestZSetLogMaxBoundRefusedByScript(t *testing.T) {
	src := source(t, ZSetLog)
	for _, args := range [][]string{
		{"1", "ms", "1000", "0", "10001", "60000"},
		{"1", "ms", "1000", "0", "5", "1000", "10001", "60000"},
	} {
		e := frozenEngine()
		_, _, err := run(t, e, src, args)
		var reply *luatest.ErrorReply
		if !errors.As(err, &reply) || !strings.Contains(reply.Msg, "ERR ratelua: ARGV[") || !strings.Contains(reply.Msg, "max) must be a canonical integer in [1, 10^4], got '10001'") {
			t.Errorf("%v: %v, want the max named", args, err)
		}
		if e.Dump(testKey) != nil {
			t.Errorf("%v wrote the key", args)
		}
	}
	e := frozenEngine()
	got, _, err := run(t, e, src, []string{"1000000", "ms", "1000", "1", "10000", "60000"})
	if err != nil || !equalInts(got, ints64(0, 0, -1, 60000, 1)) {
		t.Fatalf("eventCount 10^6 at max 10^4, mode 1: %v, %v", got, err)
	}
	if n := zcard(t, e); n != 10_001 {
		t.Errorf("after eventCount 10^6 at max 10^4: %d members, want 10,001", n)
	}
	e = frozenEngine()
	got, _, err = run(t, e, src, []string{"10000", "ms", "1000", "0", "10000", "60000"})
	if err != nil || !equalInts(got, ints64(1, 0, 0, 60000, 1)) {
		t.Fatalf("eventCount 10^4 at max 10^4: %v, %v", got, err)
	}
	if n := zcard(t, e); n != 10_000 {
		t.Errorf("after eventCount 10^4 at max 10^4: %d members, want 10,000", n)
	}
}

// zcard is the members of the test key's sorted set in e.
func zcard(t *testing.T, e *luatest.Engine) int64 {
	t.Helper()
	r, err := e.Do("ZCARD", testKey)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := r.(int64)
	return n
}
