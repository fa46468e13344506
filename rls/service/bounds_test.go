package service

import (
	"context"
	"fmt"
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
