package ratelua

import (
	"context"
	"errors"
	"testing"
	"time"
)

// replyClient answers every call with err, counting the calls.
type replyClient struct {
	err   error
	calls int
}

func (c *replyClient) Run(ctx context.Context, _ Call, _ []int64) error {
	c.calls++
	return c.err
}

// TestCallerGivingUpIsNotAnOutage (issue 20, row 2): FailOpen admits only
// when the server could not answer. A context the caller cancelled, before
// the call or while it waited, and a deadline that had passed before the
// call, are the caller's doing: denied, with the context's error and not
// ErrUnavailable, and a done context is never sent. A deadline that passes
// while the server does not answer is an outage: admitted.
func TestCallerGivingUpIsNotAnOutage(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tt := range []struct {
		name     string
		ctx      context.Context
		reply    error // the client's error, when it is asked
		admitted bool
		sent     bool
		kind     error
	}{
		{"cancelled before the call", cancelled, nil, false, false, context.Canceled},
		{"deadline passed before the call", expired, nil, false, false, context.DeadlineExceeded},
		{"cancelled while waiting", context.Background(), context.Canceled, false, true, context.Canceled},
		{"deadline passed while waiting", context.Background(), context.DeadlineExceeded, true, true, ErrUnavailable},
	} {
		for _, opts := range []Options{{FailOpen: true}, {FailOpen: true, Observe: func(context.Context, Event) {}}} {
			client := &replyClient{err: tt.reply}
			l, err := NewTokenBucket(client, opts, PerSecond(1, 1))
			if err != nil {
				t.Fatal(err)
			}
			r, err := l.Allow(tt.ctx, "k")
			if r.Allowed != tt.admitted || !errors.Is(err, tt.kind) || (client.calls > 0) != tt.sent {
				t.Errorf("%s (extras %v): %+v, %v, %d calls; want admitted %v, an error wrapping %v, sent %v",
					tt.name, opts.Observe != nil, r, err, client.calls, tt.admitted, tt.kind, tt.sent)
			}
			if !tt.admitted && errors.Is(err, ErrUnavailable) {
				t.Errorf("%s: %v wraps ErrUnavailable", tt.name, err)
			}
			if err := l.Reset(tt.ctx, "k"); err == nil {
				t.Errorf("%s: Reset: no error", tt.name)
			}
		}
	}
}
