package core

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// TestZSetLogBoundOnServers: zset_log v6 refuses a max above 10^4 (one
// limit and several), naming the argument and writing nothing; at the bound, one call of eventCount 10^6 in mode 1 (issue 30,
// M8: 10^6 members and 1.2-1.5 s at v5's bound) keeps max + 1 members, and
// a second call keeps at most max + 1 again.
func TestZSetLogBoundOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		src := scriptV6(t, ratelua.ZSetLog)
		key := "bound:{zset}"
		client.Do(ctx, client.B().Del().Key(key).Build())
		for _, args := range [][]string{
			{"1", "ms", "1000", "0", "10001", "60000"},
			{"1", "ms", "1000", "0", "5", "1000", "10001", "60000"},
		} {
			err := eval(ctx, client, src, key, args...).Error()
			if err == nil || !isRateluaError(err) || !strings.Contains(err.Error(), "max) must be a canonical integer in [1, 10^4], got '10001'") {
				t.Errorf("%v: %v, want the max named", args, err)
			}
			if d := dump(ctx, t, client, key); d != "" {
				t.Errorf("%v wrote the key", args)
			}
		}
		for i, now := range []string{"1000", "2000"} {
			got, err := eval(ctx, client, src, key, "1000000", "ms", now, "1", "10000", "60000").AsIntSlice()
			if err != nil || len(got) != 5 || got[0] != 0 || got[2] != -1 {
				t.Fatalf("call %d, eventCount 10^6 at max 10^4: %v, %v", i, got, err)
			}
			n, err := client.Do(ctx, client.B().Zcard().Key(key).Build()).AsInt64()
			if err != nil || n != 10_001 {
				t.Errorf("call %d: ZCARD %d, %v; want 10,001", i, n, err)
			}
		}
	})
}
