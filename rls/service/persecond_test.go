package service

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

const perSecondConfig = `
domain: app
descriptors:
  - key: s
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: m
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: es
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: token_bucket}
  - key: em
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: sliding_window}
`

// TestPerSecondDeployment is the reference's REDIS_PERSECOND: with a
// PerSecondClient, the limits of unit second (a reference rule, a
// descriptor's own limit, an extension rule whose limits are all per
// second) keep their counters on the second server and every other on
// the first, key for key; a request of both kinds is decided on both
// (the answers those of one server). Both servers, on the reference's
// counters and on ratelua-rls's.
func TestPerSecondDeployment(t *testing.T) {
	for _, shared := range []bool{true, false} {
		name := "own-keys"
		if shared {
			name = "shared"
		}
		t.Run(name, func(t *testing.T) {
			forEachKind(t, func(t *testing.T, kind testbench.Kind) {
				second := testbench.StartSingle(t, testbench.Options{Kind: kind})
				rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{second.Addr}, ForceSingleClient: true, DisableCache: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(rc.Close)
				at := time.Unix(1_700_000_123, 0)
				svc, first, _ := setupKind(t, kind, perSecondConfig, Options{PerSecondClient: ratelua.Rueidis(rc), ShareReferenceCounters: shared,
					ReferencePrefix: "p_", Clock: func() time.Time { return at }})
				ctx := context.Background()
				own := desc("o", "1")
				own.Limit = &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_SECOND}
				var got []string
				for range 3 {
					resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "app", Descriptors: []*rlpb.RateLimitDescriptor{
						desc("s", "1"), desc("m", "1"), desc("es", "1"), desc("em", "1"), own}})
					if err != nil {
						t.Fatal(err)
					}
					var codes []string
					for _, st := range resp.Statuses {
						codes = append(codes, st.Code.String()[:2])
					}
					got = append(got, strings.Join(codes, " "))
				}
				// Each limit decided on its own counter: o (1 a second)
				// over from the second request, the others (2) from the
				// third.
				want := []string{"OK OK OK OK OK", "OK OK OK OK OV", "OV OV OV OV OV"}
				if !slices.Equal(got, want) {
					t.Fatalf("answers %q, want %q", got, want)
				}
				keys := func(n *testbench.Node) []string {
					v, err := n.Do(ctx, "KEYS", "*")
					if err != nil {
						t.Fatal(err)
					}
					var out []string
					for _, k := range v.([]any) {
						out = append(out, k.(string))
					}
					slices.Sort(out)
					return out
				}
				onFirst, onSecond := keys(first), keys(second)
				// A key names its descriptor's entry: _s_1_ in the
				// reference's keys, |1:s1:1 (each part after its length) in
				// ratelua-rls's own.
				has := func(keys []string, entry string) bool {
					return slices.ContainsFunc(keys, func(k string) bool {
						return strings.Contains(k, "_"+entry+"_1_") || strings.Contains(k, "|"+strconv.Itoa(len(entry))+":"+entry+"1:1")
					})
				}
				for _, e := range []string{"s", "es", "o"} {
					if !has(onSecond, e) || has(onFirst, e) {
						t.Errorf("%s (per second): keys on the first server %q, on the second %q; want its on the second only", e, onFirst, onSecond)
					}
				}
				for _, e := range []string{"m", "em"} {
					if !has(onFirst, e) || has(onSecond, e) {
						t.Errorf("%s (per minute): keys on the first server %q, on the second %q; want its on the first only", e, onFirst, onSecond)
					}
				}
				if shared {
					for _, k := range []string{"p_app_s_1_1700000123", "p_app_o_1_1700000123"} {
						if !slices.Contains(onSecond, k) {
							t.Errorf("the reference's key %s not on the second server: %q", k, onSecond)
						}
					}
					if !slices.Contains(onFirst, "p_app_m_1_1700000100") {
						t.Errorf("the reference's key p_app_m_1_1700000100 not on the first server: %q", onFirst)
					}
				}
			})
		})
	}
}
