package service

import (
	"context"
	"fmt"
	"testing"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/ratelua/ratelua/rls/stats"
	"github.com/ratelua/ratelua/testbench"
)

// TestLocalCacheIsTheReferences: with the reference's local cache
// (LocalCache), a descriptor the server answered over its limit is over
// for the rest of its window without a round trip, under a higher limit
// too, its hits counted over and over with local cache; those hits never
// reach the server, so once the entry is dropped (a cache of one entry,
// another descriptor over its limit) the server's count is the one before
// them. The exact deny cache would answer the higher limit from the
// server, with the kept hits.
func TestLocalCacheIsTheReferences(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		counters := mustStats(t)
		svc, node, _ := setupKind(t, kind, denyConfig, Options{Stats: counters, LocalCache: 1, Clock: frozenClock()})
		ctx := context.Background()
		ask := func(d *rlpb.RateLimitDescriptor) string {
			t.Helper()
			resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlpb.RateLimitDescriptor{d}})
			if err != nil {
				t.Fatal(err)
			}
			s := resp.Statuses[0]
			return fmt.Sprintf("%s/%d", s.Code, s.LimitRemaining)
		}
		over := func(n uint32) *rlpb.RateLimitDescriptor {
			d := desc("a", "1")
			d.Limit = &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: n, Unit: typev3.RateLimitUnit_HOUR}
			return d
		}
		var got []string
		for range 4 { // 3 an hour: the 4th is over, the server's count 4
			got = append(got, ask(desc("a", "1")))
		}
		calls := commandCalls(t, node, "evalsha")
		for range 3 {
			got = append(got, ask(desc("a", "1")))
		}
		got = append(got, ask(over(10))) // still over: the entry holds under any limit
		if after := commandCalls(t, node, "evalsha"); after != calls {
			t.Errorf("script calls: %d before the cached answers, %d after, want none", calls, after)
		}
		if want := "[OK/2 OK/1 OK/0 OVER_LIMIT/0 OVER_LIMIT/0 OVER_LIMIT/0 OVER_LIMIT/0 OVER_LIMIT/0]"; fmt.Sprint(got) != want {
			t.Fatalf("answers %v, want %s", got, want)
		}
		// z (0 a minute) over: its entry takes a's place.
		if g := ask(desc("z", "1")); g != "OVER_LIMIT/0" {
			t.Fatalf("z: %s, want OVER_LIMIT/0", g)
		}
		// a's count on the server is 4: the 4 cached hits were not sent.
		if g := ask(over(10)); g != "OK/5" {
			t.Fatalf("a under 10 an hour after its entry was dropped: %s, want OK/5 (the server's count 4, and 1)", g)
		}
		var local, overLimit uint64
		for _, m := range counters.Snapshot() {
			local += m[stats.OverLimitWithLocalCache]
			overLimit += m[stats.OverLimit]
		}
		if local != 4 || overLimit != 6 {
			t.Errorf("over_limit_with_local_cache %d, over_limit %d; want 4 and 6 (a: 1 + 4 cached, z: 1)", local, overLimit)
		}
	})
}
