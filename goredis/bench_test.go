package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/goredis"
)

// canned is a go-redis hook that answers every command with one reply and
// sends nothing, as the rueidis mock does in ratelua's
// BenchmarkAllowCanned: the benchmark measures only the client side.
type canned struct{ reply []any }

func (canned) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h canned) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		cmd.(*redis.Cmd).SetVal(h.reply)
		return nil
	}
}

func (h canned) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(_ context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			cmd.(*redis.Cmd).SetVal(h.reply)
		}
		return nil
	}
}

// BenchmarkAllowCanned: client-side ns/op and allocs/op of Allow on
// go-redis (the login limiter of ratelua's BenchmarkAllowCanned).
func BenchmarkAllowCanned(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	rdb.AddHook(canned{reply: []any{int64(1), int64(4), int64(0), int64(3600000), int64(2)}})
	l, err := ratelua.NewSlidingWindow(goredis.New(rdb), ratelua.Options{},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(ctx, "203.0.113.7"); err != nil {
			b.Fatal(err)
		}
	}
}
