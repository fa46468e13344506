package core

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"
)

func ints(xs ...int64) rueidis.RedisResult {
	msgs := make([]rueidis.RedisMessage, len(xs))
	for i, x := range xs {
		msgs[i] = mock.RedisInt64(x)
	}
	return mock.Result(mock.RedisArray(msgs...))
}

func TestAllowDecodesAndFails(t *testing.T) {
	ctx := context.Background()
	ctrl := gomock.NewController(t)
	client := mock.NewClient(ctrl)
	closed, _ := ratelua.NewZSetLog(ratelua.Rueidis(client), ratelua.Options{}, ratelua.Log{Max: 5, Window: time.Minute}, ratelua.Log{Max: 100, Window: time.Hour})
	open, _ := ratelua.NewZSetLog(ratelua.Rueidis(client), ratelua.Options{FailOpen: true}, ratelua.Log{Max: 5, Window: time.Minute}, ratelua.Log{Max: 100, Window: time.Hour})
	evalsha := mock.MatchFn(func(cmd []string) bool {
		return cmd[0] == "EVALSHA" && cmd[1] == closed.Script().SHA1 && cmd[3] == closed.Key("u1")
	}, "EVALSHA of zset_log for u1")

	client.EXPECT().Do(ctx, evalsha).Return(ints(0, 0, 42, 3600, 2))
	r, err := closed.Allow(ctx, "u1")
	if err != nil || r != (ratelua.Result{Allowed: false, Remaining: 0, RetryAfter: 42 * time.Millisecond, ResetAfter: 3600 * time.Millisecond, Limit: 1}) {
		t.Errorf("decode: %+v, %v", r, err)
	}

	client.EXPECT().Do(ctx, evalsha).Return(ints(0, 0, -1, 0, 1))
	r, _ = closed.AllowN(ctx, "u1", 6)
	if r.RetryAfter != ratelua.Never || r.Limit != 0 {
		t.Errorf("never: %+v", r)
	}

	client.EXPECT().Do(ctx, evalsha).Return(mock.ErrorResult(io.ErrUnexpectedEOF)).Times(2)
	r, err = closed.Allow(ctx, "u1")
	if r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("fail closed: %+v, %v", r, err)
	}
	r, err = open.Allow(ctx, "u1")
	if !r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) {
		t.Errorf("fail open: %+v, %v", r, err)
	}

	client.EXPECT().Do(ctx, evalsha).Return(mock.Result(mock.RedisError("ERR ratelua: ARGV[2] unit must be 's', 'ms' or 'us', got 'x'"))).Times(2)
	for _, l := range []*ratelua.Limiter{closed, open} {
		r, err = l.Allow(ctx, "u1")
		var se *ratelua.ServerError
		if r.Allowed || !errors.As(err, &se) || !errors.Is(err, ratelua.ErrScript) || !strings.HasPrefix(se.Message, "ratelua: ARGV[2]") || se.Script != l.Script().String() {
			t.Errorf("script error (%s): %+v, %v", l.Script(), r, err)
		}
	}

	// A reply of another shape is the script's fault: never unavailable,
	// never admitted by FailOpen.
	wrong := mock.Result(mock.RedisArray(mock.RedisInt64(1), mock.RedisString("x"), mock.RedisInt64(0), mock.RedisInt64(0), mock.RedisInt64(1)))
	for _, resp := range []rueidis.RedisResult{wrong, ints(1, 2, 3)} {
		client.EXPECT().Do(ctx, evalsha).Return(resp)
		if r, err := open.Allow(ctx, "u1"); r.Allowed || err == nil || errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("malformed reply: %+v, %v", r, err)
		}
	}

	// NOSCRIPT: the same arguments again by EVAL, which loads the script.
	client.EXPECT().Do(ctx, evalsha).Return(mock.Result(mock.RedisError("NOSCRIPT No matching script.")))
	client.EXPECT().Do(ctx, mock.MatchFn(func(cmd []string) bool {
		return cmd[0] == "EVAL" && cmd[1] == closed.Script().Source && cmd[3] == closed.Key("u1") && cmd[4] == "1"
	}, "EVAL of zset_log for u1")).Return(ints(1, 4, 0, 60000, 1))
	if r, err := closed.Allow(ctx, "u1"); err != nil || !r.Allowed || r.Remaining != 4 {
		t.Errorf("after NOSCRIPT: %+v, %v", r, err)
	}

	if _, err := closed.AllowN(ctx, "u1", 0); !errors.Is(err, ratelua.ErrInvalidLimit) {
		t.Errorf("AllowN(0): %v", err)
	}
	client.EXPECT().Do(ctx, mock.MatchFn(func(cmd []string) bool { return cmd[0] == "EVALSHA" && cmd[4] == "-1" })).Return(ints(1, 5, 0, 0, 0))
	if err := closed.Reset(ctx, "u1"); err != nil {
		t.Errorf("Reset: %v", err)
	}
}

// TestBatchRetriesOnlyNoScript: a batch is one pipelined EVALSHA per
// request; entries answered NOSCRIPT are sent again, alone, with EVAL, and
// nothing calls SCRIPT LOAD.
func TestBatchRetriesOnlyNoScript(t *testing.T) {
	ctx := context.Background()
	client := mock.NewClient(gomock.NewController(t))
	l, _ := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{}, ratelua.PerSecond(10, 10))
	first := mock.MatchFn(func(cmd []string) bool { return cmd[0] == "EVALSHA" }, "EVALSHA")
	client.EXPECT().DoMulti(ctx, first, first, first).Return([]rueidis.RedisResult{
		ints(1, 9, 0, 100, 1),
		mock.Result(mock.RedisError("NOSCRIPT No matching script. Please use EVAL.")),
		ints(1, 8, 0, 200, 1),
	})
	client.EXPECT().DoMulti(ctx, mock.MatchFn(func(cmd []string) bool {
		return cmd[0] == "EVAL" && cmd[1] == l.Script().Source && cmd[3] == l.Key("b")
	}, "EVAL for b")).Return([]rueidis.RedisResult{ints(1, 7, 0, 300, 1)})
	out := l.AllowBatch(ctx, []ratelua.Request{{Key: "a", N: 1}, {Key: "b", N: 1}, {Key: "c", N: 1}, {Key: "d", N: -1}})
	for i, want := range []int64{9, 7, 8} {
		if out[i].Err != nil || !out[i].Result.Allowed || out[i].Result.Remaining != want {
			t.Errorf("outcome %d: %+v", i, out[i])
		}
	}
	if !errors.Is(out[3].Err, ratelua.ErrInvalidLimit) {
		t.Errorf("negative N in a batch: %+v", out[3])
	}
}
