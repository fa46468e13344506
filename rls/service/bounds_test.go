package service

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/testbench"
)

const boundsConfig = `
domain: app
descriptors:
  - key: most
    rate_limit: {unit: minute, requests_per_unit: 4294967295}
  - key: billion
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
  - key: below
    rate_limit: {unit: year, requests_per_unit: 999999999}
`

// TestRequestsPerUnitUpToUint32 (issue 33 row 7): reference rules of
// requests_per_unit 999,999,999, 10^9 and 2^32-1, and a descriptor's own
// limit of 2^32-1, answer as the reference does, on the reference's
// counters and on ratelua-rls's own (the sliding window these ran on
// saturated at 10^9 + 1, so a count between that and the limit read as
// over it): a count reaching the limit exactly is OK with 0 remaining,
// one hit more is over, and a descriptor keeps its count between
// requests of huge weights.
func TestRequestsPerUnitUpToUint32(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		for _, shared := range []bool{false, true} {
			t.Run(fmt.Sprintf("shared=%t", shared), func(t *testing.T) {
				at := time.Unix(1_700_000_123, 0)
				svc, _, _ := setupKind(t, kind, boundsConfig, Options{ShareReferenceCounters: shared, Clock: func() time.Time { return at }})
				ctx := context.Background()
				type answer struct {
					code      pb.RateLimitResponse_Code
					remaining uint32
				}
				ask := func(hits uint64, d *rlpb.RateLimitDescriptor) answer {
					t.Helper()
					d.HitsAddend = wrapperspb.UInt64(hits)
					resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "app", Descriptors: []*rlpb.RateLimitDescriptor{d}})
					if err != nil {
						t.Fatal(err)
					}
					return answer{resp.Statuses[0].Code, resp.Statuses[0].LimitRemaining}
				}
				const ok, over = pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT
				own := func() *rlpb.RateLimitDescriptor {
					d := desc("most", "own")
					d.Limit = &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 4_294_967_295, Unit: typev3.RateLimitUnit_SECOND}
					return d
				}
				for _, c := range []struct {
					hits uint64
					d    *rlpb.RateLimitDescriptor
					want answer
				}{
					{3_000_000_000, desc("most", "a"), answer{ok, 1_294_967_295}},
					{1_294_967_294, desc("most", "a"), answer{ok, 1}},
					{0, desc("most", "a"), answer{ok, 1}},
					{1, desc("most", "a"), answer{ok, 0}},
					{1, desc("most", "a"), answer{over, 0}},
					{4_294_967_296, desc("most", "b"), answer{over, 0}},
					{999_999_999, desc("billion", "a"), answer{ok, 1}},
					{1, desc("billion", "a"), answer{ok, 0}},
					{1, desc("billion", "a"), answer{over, 0}},
					{1_000_000_000, desc("below", "a"), answer{over, 0}},
					{999_999_999, desc("below", "b"), answer{ok, 0}},
					{4_294_967_295, own(), answer{ok, 0}},
					{1, own(), answer{over, 0}},
				} {
					if got := ask(c.hits, c.d); got != c.want {
						t.Fatalf("%d hits on %v: %+v, want %+v", c.hits, c.d.Entries, got, c.want)
					}
				}
			})
		}
	})
}

// TestOwnCountersAreFixedWindows: without ShareReferenceCounters a
// reference rule counts under ratelua-rls's own key, which names the
// descriptor and the window's start (a rule of 3 a minute: 3 hits, then
// over until the minute ends, then 3 again), each counter expiring with
// its window; none of the reference's keys is written.
func TestOwnCountersAreFixedWindows(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		at := time.Unix(1_700_000_100, 0) // a minute's start
		svc, node, _ := setupKind(t, kind, sharedConfig, Options{Prefix: "own", Clock: func() time.Time { return at }})
		ctx := context.Background()
		ask := func() pb.RateLimitResponse_Code {
			t.Helper()
			resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "app", Descriptors: []*rlpb.RateLimitDescriptor{desc("user", "u1")}})
			if err != nil {
				t.Fatal(err)
			}
			return resp.OverallCode
		}
		const ok, over = pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT
		var got []pb.RateLimitResponse_Code
		for _, step := range []time.Duration{0, 0, 0, 0, 59 * time.Second, time.Second, 0, 0, 0} {
			at = at.Add(step)
			got = append(got, ask())
		}
		if want := []pb.RateLimitResponse_Code{ok, ok, ok, over, over, ok, ok, ok, over}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		keys, err := node.Do(ctx, "KEYS", "*")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys.([]any)) != 2 {
			t.Fatalf("keys %v, want one per window", keys)
		}
		for _, k := range keys.([]any) {
			key := k.(string)
			if !strings.HasPrefix(key, "own:") || !strings.Contains(key, "@1700000100}") && !strings.Contains(key, "@1700000160}") {
				t.Fatalf("key %q: want ratelua-rls's own, under the prefix, naming its window's start", key)
			}
			if ttl, err := node.Do(ctx, "TTL", key); err != nil || ttl.(int64) < 1 || ttl.(int64) > 60 {
				t.Fatalf("TTL %s: %v, %v; want the unit's seconds at most", key, ttl, err)
			}
		}
	})
}

const windowsConfig = `
domain: api
descriptors:
  - key: half
    rate_limit: {name: half, requests_per_unit: 2, duration: 30s}
  - key: five
    rate_limit: {requests_per_unit: 3, duration: 5m, algorithm: sliding_window, resolution: 30s}
  - key: quick
    rate_limit: {requests_per_unit: 1, duration: 1500ms, algorithm: zset_log}
  - key: bucket
    rate_limit:
      algorithm: token_bucket
      requests_per_unit: 10
      unit: second
      burst: 50
      limits:
        - {requests_per_unit: 200, duration: 90s, burst: 300}
  - key: solo
    rate_limit: {algorithm: token_bucket, requests_per_unit: 10, unit: second, burst: 50}
`

// headerMap is a response's headers by name.
func headerMap(resp *pb.RateLimitResponse) map[string]string {
	h := map[string]string{}
	for _, v := range resp.ResponseHeadersToAdd {
		h[v.Key] = v.Value
	}
	return h
}

// TestExtensionWindowLengths (issue 33 row 8): limits of 30 s, 5 min and
// 1.5 s (duration) decide over their own windows, and the reply's
// duration_until_reset, the reference's RateLimit-Reset header and the
// IETF fields say the window's length: a rule of 2 per 30 s denies the
// third hit until the 30 s window ends (20 s after 10 s in it), its
// policy w=30; a sliding 3 per 5 min admits again 5 min after a hit; a
// zset_log of 1 per 1.5 s waits 2 s (rounded up).
func TestExtensionWindowLengths(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		start := time.Unix(1_700_000_100, 0) // a multiple of 30 s and of 5 min
		at := start
		svc, _, _ := setupKind(t, kind, windowsConfig, Options{Clock: func() time.Time { return at },
			LimitHeader: "RateLimit-Limit", RemainingHeader: "RateLimit-Remaining", ResetHeader: "RateLimit-Reset", IETFHeaders: true})
		ctx := context.Background()
		type answer struct {
			code             pb.RateLimitResponse_Code
			remaining, reset int64
			limitHdr, rstHdr string
			policy, rl       string
		}
		ask := func(key string) answer {
			t.Helper()
			resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{desc(key, "v")}})
			if err != nil {
				t.Fatal(err)
			}
			st, h := resp.Statuses[0], headerMap(resp)
			return answer{resp.OverallCode, int64(st.LimitRemaining), st.DurationUntilReset.GetSeconds(), h["RateLimit-Limit"], h["RateLimit-Reset"], h["RateLimit-Policy"], h["RateLimit"]}
		}
		const ok, over = pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT
		half := func(code pb.RateLimitResponse_Code, r, reset int64) answer {
			return answer{code, r, reset, "2", fmt.Sprint(reset), `"half";q=2;w=30`, fmt.Sprintf(`"half";r=%d;t=%d`, r, reset)}
		}
		for i, c := range []struct {
			step time.Duration
			want answer
		}{
			{0, half(ok, 1, 30)},
			{0, half(ok, 0, 30)},
			{10 * time.Second, half(over, 0, 20)},
			{19 * time.Second, half(over, 0, 1)},
			{time.Second, half(ok, 1, 30)},
		} {
			at = at.Add(c.step)
			if got := ask("half"); got != c.want {
				t.Fatalf("half, step %d at +%v: %+v, want %+v", i, at.Sub(start), got, c.want)
			}
		}
		if cur := func() *pb.RateLimitResponse_RateLimit {
			resp, _ := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{desc("half", "v")}})
			return resp.Statuses[0].CurrentLimit
		}(); cur.GetUnit() != pb.RateLimitResponse_RateLimit_UNKNOWN || cur.GetRequestsPerUnit() != 2 {
			t.Fatalf("current_limit %v: want 2 per UNKNOWN (no unit is 30 s long)", cur)
		}
		at = start.Add(time.Hour)
		for range 3 {
			if a := ask("five"); a.code != ok {
				t.Fatalf("five: %+v, want OK", a)
			}
		}
		if a := ask("five"); a.code != over || a.reset != 300 || !strings.Contains(a.policy, ";q=3;w=300") {
			t.Fatalf("five, the fourth hit: %+v, want OVER_LIMIT for 300 s, w=300", a)
		}
		at = at.Add(5 * time.Minute)
		if a := ask("five"); a.code != ok {
			t.Fatalf("five, 5 min later: %+v, want OK", a)
		}
		at = start.Add(2 * time.Hour)
		if a := ask("quick"); a.code != ok {
			t.Fatalf("quick: %+v, want OK", a)
		}
		if a := ask("quick"); a.code != over || a.reset != 2 || !strings.Contains(a.policy, ";q=1;w=2") {
			t.Fatalf("quick, the second hit: %+v, want OVER_LIMIT for 2 s (1.5 s rounded up), w=2", a)
		}
		at = at.Add(1500 * time.Millisecond)
		if a := ask("quick"); a.code != ok {
			t.Fatalf("quick, 1.5 s later: %+v, want OK", a)
		}
	})
}

// TestExtensionBurst (issue 33 row 8): a token bucket of burst 50 refilled
// at 10 a second takes 40 hits at once (its rate alone would deny them),
// then 10, then none until refilled at the rate (10 a second, not 50);
// full again, it holds 50, not more; a second limit of 200 per 90 s with a
// burst of 300 decides when it runs out.
func TestExtensionBurst(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		at := time.Unix(1_700_000_100, 0)
		svc, _, _ := setupKind(t, kind, windowsConfig, Options{Clock: func() time.Time { return at }})
		ctx := context.Background()
		type answer struct {
			code      pb.RateLimitResponse_Code
			remaining uint32
			limit     uint32
		}
		ask := func(key string, hits uint64) answer {
			t.Helper()
			d := desc("bucket", key)
			if key == "solo" {
				d = desc("solo", key)
			}
			d.HitsAddend = wrapperspb.UInt64(hits)
			resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{d}})
			if err != nil {
				t.Fatal(err)
			}
			st := resp.Statuses[0]
			return answer{resp.OverallCode, st.LimitRemaining, st.CurrentLimit.GetRequestsPerUnit()}
		}
		const ok, over = pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT
		for i, c := range []struct {
			step time.Duration
			hits uint64
			want answer
		}{
			{0, 40, answer{ok, 10, 10}},
			{0, 11, answer{over, 0, 10}},
			{0, 10, answer{ok, 0, 10}},
			{time.Second, 11, answer{over, 0, 10}},
			{0, 10, answer{ok, 0, 10}},
			{time.Minute, 51, answer{over, 0, 10}},
			{0, 50, answer{ok, 0, 10}},
		} {
			at = at.Add(c.step)
			if got := ask("a", c.hits); got != c.want {
				t.Fatalf("step %d, %d hits: %+v, want %+v", i, c.hits, got, c.want)
			}
		}
		// One limit alone: the burst, not the rate, bounds a request's
		// hits (40 of them take 40 tokens, not 11).
		for i, c := range []struct {
			hits uint64
			want answer
		}{{40, answer{ok, 10, 10}}, {10, answer{ok, 0, 10}}, {1, answer{over, 0, 10}}} {
			if got := ask("solo", c.hits); got != c.want {
				t.Fatalf("solo, step %d, %d hits: %+v, want %+v", i, c.hits, got, c.want)
			}
		}
		// The second limit: 300 tokens, refilled at 200 per 90 s (11.1
		// in 5 s). 50 hits every 5 s (the first limit full again each
		// time) take it from 300 to 250, 211, 172, 133, 94, 56, 17: 7
		// admitted; the eighth finds 28 and is denied by it. Without the
		// burst (200 tokens) 4 would be.
		at = at.Add(time.Hour)
		var admitted uint64
		for range 12 {
			at = at.Add(5 * time.Second)
			if a := ask("b", 50); a.code == ok {
				admitted += 50
			} else if a.limit != 200 {
				t.Fatalf("denied by the limit of %d a unit, want the second (200 per 90 s)", a.limit)
			} else {
				break
			}
		}
		if admitted != 350 {
			t.Fatalf("admitted %d at 50 every 5 s before the second limit denied, want 350", admitted)
		}
	})
}
