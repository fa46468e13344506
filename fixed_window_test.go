package ratelua

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratelua/ratelua/luatest"
)

// engineClient runs every call on a luatest engine, by the script's SHA1
// among the embedded ones, and records the calls.
type engineClient struct {
	e     *luatest.Engine
	calls []Call
}

func (c *engineClient) Run(_ context.Context, call Call, reply []int64) error {
	c.calls = append(c.calls, call)
	for _, s := range Scripts() {
		if s.SHA1 == call.Script || s.Source == call.Script {
			res, err := c.e.Run(s.Source, []string{call.Key}, call.Args)
			if err != nil {
				return err
			}
			ints, err := luatest.Ints(res.Reply)
			if err != nil {
				return err
			}
			copy(reply, ints)
			return nil
		}
	}
	return fmt.Errorf("no embedded script %s", call.Script)
}

// TestFixedWindowExactKeys: with Options.ExactKeys, NewFixedWindow's
// state key is the event key as given (no prefix, no hash tag), the call
// is fixed_window with ARGV eventCount, unit (ms), now, mode, max, window,
// expire (seconds), and Decide counts every hit on that one key under
// CountDenied, as envoyproxy/ratelimit: a limit of 2, three calls of one
// hit, the counter at 3.
func TestFixedWindowExactKeys(t *testing.T) {
	c := &engineClient{e: frozenEngine()}
	at := time.Unix(1_700_000_123, 0)
	l, err := NewFixedWindow(c, Options{ExactKeys: true, CountDenied: true}, Fixed{Max: 2, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const key = "pfx_app_user_u1_1700000100"
	if got := l.Key(key); got != key {
		t.Fatalf("Key(%q) = %q, want the event key as given", key, got)
	}
	var allowed []bool
	for range 3 {
		o := Decide(context.Background(), c, []Check{{Limiter: l, Key: key, N: 1, At: at}})[0]
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		allowed = append(allowed, o.Result.Allowed)
	}
	if fmt.Sprint(allowed) != "[true true false]" {
		t.Fatalf("allowed %v, want [true true false]", allowed)
	}
	last := c.calls[len(c.calls)-1]
	if last.Key != key || fmt.Sprint(last.Args) != "[1 ms 1700000123000 1 2 60000 60]" {
		t.Fatalf("call %+v, want key %q and ARGV [1 ms 1700000123000 1 2 60000 60]", last, key)
	}
	if v, _ := c.e.Do("GET", key); v != "3" {
		t.Fatalf("counter %v, want 3 (every hit counted)", v)
	}
	if keys := c.e.Keys(); len(keys) != 1 {
		t.Fatalf("keys %q, want the one given", keys)
	}
	plain, err := NewFixedWindow(c, Options{}, Fixed{Max: 2, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.Key("u1"); got == "u1" || got[:len("ratelua:{u1}:fixed_window:v7:")] != "ratelua:{u1}:fixed_window:v7:" {
		t.Fatalf("without ExactKeys Key(u1) = %q, want the Go API's ratelua:{u1}:fixed_window:v7:<hash>", got)
	}
}

// TestNewFixedWindowRefusesBadLimits: a limit the script would refuse is
// refused in Go, naming the field.
func TestNewFixedWindowRefusesBadLimits(t *testing.T) {
	c := &engineClient{e: frozenEngine()}
	for _, tc := range []struct {
		f     Fixed
		field string
	}{
		{Fixed{Max: -1, Window: time.Second}, "Max"},
		{Fixed{Max: 1 << 53, Window: time.Second}, "Max"},
		{Fixed{Max: 1, Window: 0}, "Window"},
		{Fixed{Max: 1, Window: time.Second, Expire: 1500 * time.Millisecond}, "Expire"},
		{Fixed{Max: 1, Window: time.Second, Expire: -time.Second}, "Expire"},
	} {
		_, err := NewFixedWindow(c, Options{}, tc.f)
		var le *LimitError
		if !errors.As(err, &le) || le.Field != tc.field {
			t.Errorf("%+v: error %v, want a LimitError naming %s", tc.f, err, tc.field)
		}
	}
	if _, err := NewFixedWindow(c, Options{}, Fixed{Max: 0, Window: time.Second}); err != nil {
		t.Errorf("Max 0 (every event denied, as the reference's requests_per_unit 0): %v", err)
	}
}
