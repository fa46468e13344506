package service

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratelua/ratelua/rls/stats"
	"github.com/ratelua/ratelua/rls/statsink"
	"github.com/ratelua/ratelua/testbench"
)

// scrapeSink flushes store and returns what sink serves, by "name{labels}".
func scrapeSink(t *testing.T, store *statsink.Store, sink *statsink.PrometheusSink) map[string]string {
	t.Helper()
	store.Flush()
	rec := httptest.NewRecorder()
	sink.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := map[string]string{}
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		out[l[:i]] = l[i+1:]
	}
	return out
}

// TestServiceStatisticsExported (issue 33, statistics): the service counts
// the reference's service statistics under its names, beside the rules':
// global_shadow_mode for a request SHADOW_MODE answered OK,
// domain_not_found per descriptor of an unknown domain, service_error for
// a request refused, and, with the server down, redis_error and the
// descriptors' total_hits (the reference counts them before its call),
// nothing else.
func TestServiceStatisticsExported(t *testing.T) {
	m, err := statsink.ReferenceMapper()
	if err != nil {
		t.Fatal(err)
	}
	sink := statsink.NewPrometheusSink(m)
	store := statsink.NewStore(sink, nil)
	counters, err := stats.New(0.8, nil)
	if err != nil {
		t.Fatal(err)
	}
	counters.Export(store)
	svc, node, _ := setupKind(t, testbench.Redis, "domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 2}\n",
		Options{Stats: counters, ShadowMode: true})
	ctx := context.Background()
	user := &pb.RateLimitRequest{Domain: "app", Descriptors: []*rlpb.RateLimitDescriptor{desc("user", "u1")}}
	for range 3 {
		if resp, err := svc.ShouldRateLimit(ctx, user); err != nil || resp.OverallCode != pb.RateLimitResponse_OK {
			t.Fatalf("%v, %v: want OK (shadow mode)", resp, err)
		}
	}
	if _, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "nope", Descriptors: []*rlpb.RateLimitDescriptor{desc("a", "1"), desc("b", "2")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Descriptors: user.Descriptors}); err == nil {
		t.Fatal("an empty domain answered")
	}
	if err := node.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ShouldRateLimit(ctx, user); err == nil {
		t.Fatal("answered with the server down")
	}
	got := scrapeSink(t, store, sink)
	for name, want := range map[string]string{
		`ratelimit_service_rate_limit_total_hits{domain="app",key1="user"}`:   "4",
		`ratelimit_service_rate_limit_within_limit{domain="app",key1="user"}`: "2",
		`ratelimit_service_rate_limit_over_limit{domain="app",key1="user"}`:   "1",
		`ratelimit_service_rate_limit_near_limit{domain="app",key1="user"}`:   "1",
		`ratelimit_service_global_shadow_mode`:                                "1",
		`ratelimit_service_rate_limit_nope_domain_not_found`:                  "2",
		`ratelimit_service_should_rate_limit_error{err_type="service_error"}`: "1",
		`ratelimit_service_should_rate_limit_error{err_type="redis_error"}`:   "1",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %s", name, got[name], want)
		}
	}
	if t.Failed() {
		t.Logf("exported: %v", got)
	}
}
