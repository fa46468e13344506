package service

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/testbench"
)

const stopConfig = `
domain: app
descriptors:
  - key: a
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: b
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: s
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: x
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: token_bucket}
`

// TestStopIncrementWhenOverLimit is the reference's
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT (its fixed_cache_impl.go):
// when one reference descriptor of a request would go over its limit,
// only those that would go over count the request's hits, and the
// others count nothing and answer from the count read (their hits not
// taken off; decided on the count after the descriptors before it); with
// none over, all count; a lone descriptor always
// counts; a descriptor of 0 hits over its limit stops the others; a
// shadow-mode rule over its limit stops the others too, though the
// request is OK; an extension rule neither stops nor is stopped. On
// the reference's own counters (the keys checked) and on ratelua-rls's,
// both servers.
func TestStopIncrementWhenOverLimit(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			forEachKind(t, func(t *testing.T, kind testbench.Kind) {
				at := time.Unix(1_700_000_123, 0)
				svc, node, _ := setupKind(t, kind, stopConfig, Options{StopIncrementWhenOverLimit: true, ShareReferenceCounters: shared,
					ReferencePrefix: "p_", Clock: func() time.Time { return at }})
				ctx := context.Background()
				ask := func(ds ...*rlpb.RateLimitDescriptor) string {
					t.Helper()
					resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "app", Descriptors: ds})
					if err != nil {
						t.Fatal(err)
					}
					var b strings.Builder
					b.WriteString(resp.OverallCode.String())
					for _, s := range resp.Statuses {
						fmt.Fprintf(&b, " %s/%d", s.Code, s.LimitRemaining)
					}
					return b.String()
				}
				hits := func(d *rlpb.RateLimitDescriptor, n uint64) *rlpb.RateLimitDescriptor {
					d.HitsAddend = wrapperspb.UInt64(n)
					return d
				}
				steps := []struct{ got, want string }{
					// None over: both count (a 1, b 1; a 2, b 2).
					{ask(desc("a", "1"), desc("b", "1")), "OK OK/1 OK/9"},
					{ask(desc("a", "1"), desc("b", "1")), "OK OK/0 OK/8"},
					// a would go over: a counts (3, 4), b does not (2), its
					// remaining from the count read, 10 - 2.
					{ask(desc("a", "1"), desc("b", "1")), "OVER_LIMIT OVER_LIMIT/0 OK/8"},
					{ask(desc("b", "1"), desc("a", "1")), "OVER_LIMIT OK/8 OVER_LIMIT/0"},
					// Alone, b counts (3).
					{ask(desc("b", "1")), "OK OK/7"},
					// a of 0 hits is over (4 + 0 > 2): b's 5 hits not counted.
					{ask(hits(desc("a", "1"), 0), hits(desc("b", "1"), 5)), "OVER_LIMIT OVER_LIMIT/0 OK/7"},
					// b's 8 hits would go over too (3 + 8 > 10): both count
					// (a 5, b 11).
					{ask(desc("a", "1"), hits(desc("b", "1"), 8)), "OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0"},
					// The shadow rule: within (s 1, c 1), then over (s 2),
					// stopping c, the request OK.
					{ask(desc("s", "1"), desc("b", "c")), "OK OK/0 OK/9"},
					{ask(desc("s", "1"), desc("b", "c")), "OK OK/0 OK/9"},
					// An extension rule over nothing, beside a over: x
					// counts (99 left, then 98), b not (c stays 1).
					{ask(desc("a", "1"), desc("x", "1"), desc("b", "c")), "OVER_LIMIT OVER_LIMIT/0 OK/99 OK/9"},
					{ask(desc("a", "1"), desc("x", "1"), desc("b", "c")), "OVER_LIMIT OVER_LIMIT/0 OK/98 OK/9"},
					// Beside an extension rule only, b counts (f 1).
					{ask(desc("x", "2"), desc("b", "f")), "OK OK/99 OK/9"},
					// b alone again: c 2.
					{ask(desc("b", "c")), "OK OK/8"},
					// One descriptor twice (two rules' worth of hits on one
					// key): the uncounted one is decided on the count after
					// those before it, as the reference's INCRBY 0 in its
					// place in the pipeline. d: 0 + 5 over, then 5.
					{ask(hits(desc("a", "d"), 5), hits(desc("a", "d"), 1)), "OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0"},
					// e: the first not counted (0), the second over (5).
					{ask(hits(desc("a", "e"), 1), hits(desc("a", "e"), 5)), "OVER_LIMIT OK/2 OVER_LIMIT/0"},
				}
				for i, s := range steps {
					if s.got != s.want {
						t.Errorf("request %d: %s, want %s", i+1, s.got, s.want)
					}
				}
				if !shared {
					return
				}
				const hour = "_1699999200"
				for key, want := range map[string]string{"p_app_a_1" + hour: "7", "p_app_b_1" + hour: "11", "p_app_s_1" + hour: "2", "p_app_b_c" + hour: "2", "p_app_a_d" + hour: "5", "p_app_a_e" + hour: "5", "p_app_b_f" + hour: "1"} {
					if v, err := node.Do(ctx, "GET", key); err != nil || v != want {
						t.Errorf("GET %s: %v, %v; want %s", key, v, err, want)
					}
				}
			})
		})
	}
}
