package service

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/ratelua/ratelua/testbench"
)

const sharedConfig = `
domain: app
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: 3
  - key: client_id
    value: acme
    descriptors:
      - key: path
        rate_limit:
          unit: second
          requests_per_unit: 2
  - key: tenant
    value: t*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 4
`

// TestSharedCountersAreTheReferences: with ShareReferenceCounters the
// service's state is envoyproxy/ratelimit's, key for key: at a fixed
// clock (1,700,000,123 s), the keys are the reference's
// <prefix><domain>_<key>_<value>_..._<window start> (a share_threshold
// entry under its wildcard, a descriptor's own limit under its entries),
// written here by hand; each counter holds every hit sent, denied ones
// too (the reference's INCRBY); its TTL is the unit's seconds (EXPIRE);
// and no other key exists.
func TestSharedCountersAreTheReferences(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		at := time.Unix(1_700_000_123, 400_000_000)
		svc, node, _ := setupKind(t, kind, sharedConfig, Options{ShareReferenceCounters: true, ReferencePrefix: "pfx_", Clock: func() time.Time { return at }})
		ctx := context.Background()
		ask := func(hits uint32, d *rlpb.RateLimitDescriptor) pb.RateLimitResponse_Code {
			t.Helper()
			resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "app", HitsAddend: hits, Descriptors: []*rlpb.RateLimitDescriptor{d}})
			if err != nil {
				t.Fatal(err)
			}
			return resp.OverallCode
		}
		const ok, over = pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT
		var got []pb.RateLimitResponse_Code
		for _, h := range []uint32{2, 2, 1} {
			got = append(got, ask(h, desc("user", "u1")))
		}
		for range 3 {
			got = append(got, ask(1, desc("client_id", "acme", "path", "/x")))
		}
		for i := range 5 {
			got = append(got, ask(1, desc("tenant", "t"+strconv.Itoa(i%2+1))))
		}
		own := desc("user", "u2")
		own.Limit = &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_SECOND}
		got = append(got, ask(1, own), ask(1, own))
		want := []pb.RateLimitResponse_Code{ok, over, over, ok, ok, over, ok, ok, ok, ok, over, ok, over}
		if !slices.Equal(got, want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		counters := map[string]struct {
			count string
			ttl   int64 // seconds
		}{
			"pfx_app_user_u1_1700000100":                {"5", 60},
			"pfx_app_client_id_acme_path_/x_1700000123": {"3", 1},
			"pfx_app_tenant_t*_1699999200":              {"5", 3600},
			"pfx_app_user_u2_1700000123":                {"2", 1},
		}
		keys, err := node.Do(ctx, "KEYS", "*")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range keys.([]any) {
			names = append(names, k.(string))
		}
		if len(names) != len(counters) {
			t.Fatalf("keys %q, want the reference's %d", names, len(counters))
		}
		for key, c := range counters {
			v, err := node.Do(ctx, "GET", key)
			if err != nil || v != c.count {
				t.Fatalf("GET %s: %v, %v; want %s (every hit counted); keys %q", key, v, err, c.count, names)
			}
			ttl, err := node.Do(ctx, "TTL", key)
			if err != nil || ttl.(int64) != c.ttl {
				t.Fatalf("TTL %s: %v, %v; want %d (EXPIRE by the unit's seconds)", key, ttl, err, c.ttl)
			}
		}
	})
}
