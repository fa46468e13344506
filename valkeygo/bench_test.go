package valkeygo_test

import (
	"context"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/valkeygo"
)

// cannedClient answers every command with one reply, as the rueidis mock
// does in ratelua's BenchmarkAllowCanned: the benchmark measures only the
// client side. valkey-go's mock module is not on the module proxy, so the
// reply is one the server gave once.
type cannedClient struct {
	valkey.Client
	reply valkey.ValkeyResult
}

func (c cannedClient) Do(context.Context, valkey.Completed) valkey.ValkeyResult { return c.reply }

func (c cannedClient) DoMulti(_ context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	out := make([]valkey.ValkeyResult, len(cmds))
	for i := range out {
		out[i] = c.reply
	}
	return out
}

// BenchmarkAllowCanned: client-side ns/op and allocs/op of Allow on
// valkey-go (the login limiter of ratelua's BenchmarkAllowCanned).
func BenchmarkAllowCanned(b *testing.B) {
	ctx := context.Background()
	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	defer vc.Close()
	reply := vc.Do(ctx, vc.B().Eval().Script("return {1, 4, 0, 3600000, 2}").Numkeys(0).Build())
	if err := reply.Error(); err != nil {
		b.Fatal(err)
	}
	l, err := ratelua.NewSlidingWindow(valkeygo.New(cannedClient{Client: vc, reply: reply}), ratelua.Options{},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(ctx, "203.0.113.7"); err != nil {
			b.Fatal(err)
		}
	}
}
