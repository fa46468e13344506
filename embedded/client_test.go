package embedded_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/embedded"
)

// TestClientAsAServer: the engine answers as a server would: NOSCRIPT for
// a script it has not seen, a *ServerError for an error reply, an error
// wrapping ErrNotSupported for FCALL, and nothing for a caller who gave up.
func TestClientAsAServer(t *testing.T) {
	c := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	ctx := context.Background()
	reply := make([]int64, 1)
	var se *ratelua.ServerError
	err := c.Run(ctx, ratelua.Call{Command: "EVALSHA", Script: strings.Repeat("0", 40), Key: "k"}, reply)
	if !errors.As(err, &se) || !strings.HasPrefix(se.Message, "NOSCRIPT") {
		t.Errorf("EVALSHA of an unknown script: %v, want a NOSCRIPT *ServerError", err)
	}
	err = c.Run(ctx, ratelua.Call{Command: "EVAL", Script: "return redis.error_reply('ERR boom')", Key: "k"}, reply)
	if !errors.As(err, &se) || se.Message != "ERR boom" {
		t.Errorf("an error reply: %v, want the *ServerError ERR boom", err)
	}
	err = c.Run(ctx, ratelua.Call{Command: "FCALL", Script: "ratelua_token_bucket_v6", Key: "k"}, reply)
	if !errors.Is(err, ratelua.ErrNotSupported) {
		t.Errorf("FCALL: %v, want ErrNotSupported", err)
	}
	err = c.Run(ctx, ratelua.Call{Command: "EVAL", Script: "return {1, 2}", Key: "k"}, reply)
	if err == nil {
		t.Error("a reply of two integers where one was wanted: no error")
	}
	if err := c.Run(ctx, ratelua.Call{Command: "EVAL", Script: "return {7}", Key: "k"}, reply); err != nil || reply[0] != 7 {
		t.Errorf("return {7}: %v %v", reply, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Run(cancelled, ratelua.Call{Command: "EVAL", Script: "return {8}", Key: "k"}, reply); !errors.Is(err, context.Canceled) || reply[0] != 7 {
		t.Errorf("a cancelled call: %v, reply %v; want context.Canceled and the reply untouched", err, reply)
	}
}

// TestClientFollowsItsClock: keys expire on the Client's clock, read at
// every call, so a limiter's denial ends when the clock moves past it.
func TestClientFollowsItsClock(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := embedded.New(embedded.Options{Clock: func() time.Time { return now }})
	l, err := ratelua.NewTokenBucket(c, ratelua.Options{Prefix: "t"}, ratelua.Bucket{Capacity: 1, RefillAmount: 1, RefillInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, want := range []bool{true, false} {
		if r, err := l.Allow(ctx, "k"); err != nil || r.Allowed != want {
			t.Fatalf("call %d: %+v %v, want allowed %v", i+1, r, err, want)
		}
	}
	now = now.Add(time.Minute)
	if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
		t.Fatalf("a minute later: %+v %v, want allowed", r, err)
	}
}

// TestCapabilities: the engine offers neither optional capability of a
// Client, so that ratelua sends its batches one call at a time and
// refuses per-node work with ErrNotSupported, naming the client.
func TestCapabilities(t *testing.T) {
	var c ratelua.Client = embedded.New(embedded.Options{})
	if _, ok := c.(ratelua.Batcher); ok {
		t.Error("the engine claims to batch")
	}
	if _, ok := c.(ratelua.NodeLister); ok {
		t.Error("the engine claims to list nodes")
	}
	_, err := ratelua.ResetPrefixWith(context.Background(), c, "p", ratelua.ResetOptions{})
	if !errors.Is(err, ratelua.ErrNotSupported) || !strings.Contains(err.Error(), "embedded.Client") {
		t.Errorf("ResetPrefix on the engine: %v, want ErrNotSupported naming *embedded.Client", err)
	}
}
