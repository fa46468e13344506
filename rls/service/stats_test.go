package service

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/rls/stats"
	"github.com/ratelua/ratelua/testbench"
)

const statsConfig = `
domain: m
descriptors:
  - key: k
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: cross
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: s
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: ip
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: x
    rate_limit: {unit: hour, requests_per_unit: 10, algorithm: sliding_window}
`

// TestStatisticsAsOpenTelemetryMetrics: the statistics of each rule, as
// the reference counts them (worked out by hand below, NEAR_LIMIT_RATIO
// 0.8), reach a manual reader as the counters ratelua.rls.<name> with the
// rule's name, and /stats's snapshot holds the same.
func TestStatisticsAsOpenTelemetryMetrics(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		reader := sdkmetric.NewManualReader()
		counters, err := stats.New(0.8, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
		if err != nil {
			t.Fatal(err)
		}
		svc, _, _ := setupKind(t, kind, statsConfig, Options{Stats: counters, Clock: frozenClock()})
		ctx := context.Background()
		// ask sends hits as the descriptor's hits_addend (0: check only).
		ask := func(hits uint64, kv ...string) pb.RateLimitResponse_Code {
			t.Helper()
			d := desc(kv...)
			d.HitsAddend = wrapperspb.UInt64(hits)
			resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlpb.RateLimitDescriptor{d}})
			if err != nil {
				t.Fatal(err)
			}
			return resp.OverallCode
		}
		// k, 5 an hour (near past 4): 3 within; 2 within, the count 5 is
		// one past 4; 3 over from 5; a check of 0 hits over.
		ask(3, "k", "a")
		if ask(2, "k", "a") != pb.RateLimitResponse_OK {
			t.Fatal("k: 5 of 5 not within the limit")
		}
		if ask(3, "k", "a") != pb.RateLimitResponse_OVER_LIMIT {
			t.Fatal("k: 8 of 5 not over the limit")
		}
		ask(0, "k", "a")
		// cross, 5 an hour: 4 within; 3 from 4 to 7: 2 over, 1 near.
		ask(4, "cross", "a")
		ask(3, "cross", "a")
		// s, 2 an hour in shadow mode (near past 1): 1 within; 2 from 1
		// to 3: 1 over and shadow, 1 near; 1 more over and shadow. The
		// answers are OK.
		ask(1, "s", "a")
		if ask(2, "s", "a") != pb.RateLimitResponse_OK {
			t.Fatal("shadow mode denied")
		}
		ask(1, "s", "a")
		// ip, detailed: a statistic per address, its dots as '_'.
		ask(1, "ip", "10.0.0.1")
		ask(1, "ip", "10.0.0.1")
		ask(4, "ip", "10.0.0.2")
		// x, an extension rule of 10 an hour (near past 8): 9 within, 1
		// near; 2 more denied, counted nowhere but over.
		ask(9, "x", "a")
		ask(2, "x", "a")
		want := map[string]map[string]int64{
			"m.k":           {"total_hits": 8, "within_limit": 5, "near_limit": 1, "over_limit": 3},
			"m.cross":       {"total_hits": 7, "within_limit": 4, "near_limit": 1, "over_limit": 2},
			"m.s":           {"total_hits": 4, "within_limit": 1, "near_limit": 1, "over_limit": 2, "shadow_mode": 2},
			"m.ip_10_0_0_1": {"total_hits": 2, "within_limit": 2},
			"m.ip_10_0_0_2": {"total_hits": 4, "over_limit": 1, "near_limit": 1},
			"m.x":           {"total_hits": 11, "within_limit": 9, "near_limit": 1, "over_limit": 2},
		}
		got := collectStats(t, reader)
		snap := counters.Snapshot()
		for rule, w := range want {
			for _, name := range stats.Names() {
				if got[rule][name] != w[name] {
					t.Errorf("metric ratelua.rls.%s{rule=%q} = %d, want %d", name, rule, got[rule][name], w[name])
				}
				if int64(snap[rule][name]) != w[name] {
					t.Errorf("/stats %s %s = %d, want %d", rule, name, snap[rule][name], w[name])
				}
			}
		}
		if len(got) != len(want) || len(snap) != len(want) {
			t.Errorf("rules measured: %v; in /stats: %v; want %d", got, counters.Keys(), len(want))
		}
	})
}

// collectStats reads the counters of the reader by rule and name.
func collectStats(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != stats.MeterScope {
			t.Errorf("scope %q, want %q", sm.Scope.Name, stats.MeterScope)
		}
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || !sum.IsMonotonic || m.Unit != "{hit}" {
				t.Errorf("%s: %T (monotonic %v), unit %q; want a counter of {hit}", m.Name, m.Data, sum.IsMonotonic, m.Unit)
				continue
			}
			for _, dp := range sum.DataPoints {
				rule, ok := dp.Attributes.Value(stats.RuleAttribute)
				if !ok || dp.Attributes.Len() != 1 {
					t.Errorf("%s: attributes %v, want %s alone", m.Name, dp.Attributes.ToSlice(), stats.RuleAttribute)
					continue
				}
				if out[rule.AsString()] == nil {
					out[rule.AsString()] = map[string]int64{}
				}
				out[rule.AsString()][m.Name[len("ratelua.rls."):]] += dp.Value
			}
		}
	}
	return out
}

// frozenClock is a clock that stands at the time it is made, so that a
// test's requests share one window of every unit however long the
// machine's load makes them take.
func frozenClock() func() time.Time {
	at := time.Now()
	return func() time.Time { return at }
}

// TestDetailedMetricNamesAreBounded (issue 30, M6): a detailed_metric
// rule's statistics kept one entry per value forever (20,000 values took
// RSS from 23 to 107 MB); the first stats.MaxStatNamesPerRule values keep their
// entries, the hits of every later one count under the rule's overflow
// name, and the rule's totals stay whole, in /stats and in the metrics.
func TestDetailedMetricNamesAreBounded(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	counters, err := stats.New(0.8, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	svc, _, _ := setupKind(t, testbench.Redis, statsConfig, Options{Stats: counters})
	ctx := context.Background()
	const values = stats.MaxStatNamesPerRule + 50
	for i := range values {
		ip := fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
		if _, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlpb.RateLimitDescriptor{desc("ip", ip), desc("k", "a")}}); err != nil {
			t.Fatal(err)
		}
	}
	own, hits := 0, uint64(0)
	for name, m := range counters.Snapshot() {
		if strings.HasPrefix(name, "m.ip_") {
			own++
			hits += m[stats.TotalHits]
		}
	}
	over := counters.Snapshot()["m.ip"+stats.OverflowSuffix]
	if own != stats.MaxStatNamesPerRule || over[stats.TotalHits] != 50 || over[stats.WithinLimit] != 50 || hits+over[stats.TotalHits] != values {
		t.Fatalf("%d names of their own with %d hits, overflow %v; want %d names, 50 hits in the overflow, %d in all", own, hits, over, stats.MaxStatNamesPerRule, values)
	}
	if k := counters.Snapshot()["m.k"]; k[stats.TotalHits] != values {
		t.Fatalf("m.k (no detailed_metric) %v, want its %d hits under its one name", k, values)
	}
	if got := collectStats(t, reader); len(got) != stats.MaxStatNamesPerRule+2 || got["m.ip"+stats.OverflowSuffix][stats.TotalHits] != 50 {
		t.Fatalf("%d rules measured (overflow %v), want %d", len(got), got["m.ip"+stats.OverflowSuffix], stats.MaxStatNamesPerRule+2)
	}
}

// TestExtensionNearLimitPerRequest (issue 36, row 3): an extension rule's
// near_limit counts, per request, only that request's hits past the
// near-limit ratio: on 10 an hour (near past 8), 9 hits are 1 near, a
// following hit 1 near (not 2, the count past 8), and a hit past the limit
// none, on every algorithm that counts exactly.
func TestExtensionNearLimitPerRequest(t *testing.T) {
	const config = `
domain: n
descriptors:
  - {key: fixed_window, rate_limit: {unit: hour, requests_per_unit: 10, algorithm: fixed_window}}
  - {key: sliding_window, rate_limit: {unit: hour, requests_per_unit: 10, algorithm: sliding_window}}
  - {key: token_bucket, rate_limit: {unit: hour, requests_per_unit: 10, algorithm: token_bucket}}
  - {key: zset_log, rate_limit: {unit: hour, requests_per_unit: 10, algorithm: zset_log}}
`
	counters := mustStats(t)
	svc, _, _ := setupKind(t, testbench.Redis, config, Options{Stats: counters, Clock: frozenClock()})
	ctx := context.Background()
	for _, alg := range []string{"fixed_window", "sliding_window", "token_bucket", "zset_log"} {
		rule := "n." + alg
		steps := []struct {
			hits             uint64
			near, within, ov uint64
		}{{9, 1, 9, 0}, {1, 1, 1, 0}, {1, 0, 0, 1}}
		for i, st := range steps {
			before := counters.Snapshot()[rule]
			d := desc(alg, "a")
			d.HitsAddend = wrapperspb.UInt64(st.hits)
			if _, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "n", Descriptors: []*rlpb.RateLimitDescriptor{d}}); err != nil {
				t.Fatal(err)
			}
			after := counters.Snapshot()[rule]
			near, within, over := after[stats.NearLimit]-before[stats.NearLimit], after[stats.WithinLimit]-before[stats.WithinLimit], after[stats.OverLimit]-before[stats.OverLimit]
			if near != st.near || within != st.within || over != st.ov {
				t.Errorf("%s request %d (%d hits): near %d, within %d, over %d; want %d, %d, %d", alg, i+1, st.hits, near, within, over, st.near, st.within, st.ov)
			}
		}
	}
}

// TestBurstNearLimit (issue 33 row 8): a token bucket's near_limit is
// measured against its burst, the tokens a full bucket holds: of a burst
// of 50 at 10 an hour (near past 40), 45 hits are 5 near, where against
// the rate (near past 8, 45 of 50 leaving 5) they would be none.
func TestBurstNearLimit(t *testing.T) {
	const config = `
domain: n
descriptors:
  - {key: b, rate_limit: {unit: hour, requests_per_unit: 10, burst: 50, algorithm: token_bucket}}
`
	counters := mustStats(t)
	svc, _, _ := setupKind(t, testbench.Redis, config, Options{Stats: counters, Clock: frozenClock()})
	d := desc("b", "a")
	d.HitsAddend = wrapperspb.UInt64(45)
	if _, err := svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "n", Descriptors: []*rlpb.RateLimitDescriptor{d}}); err != nil {
		t.Fatal(err)
	}
	got := counters.Snapshot()["n.b"]
	if got[stats.NearLimit] != 5 || got[stats.WithinLimit] != 45 || got[stats.OverLimit] != 0 {
		t.Fatalf("near %d, within %d, over %d; want 5, 45, 0", got[stats.NearLimit], got[stats.WithinLimit], got[stats.OverLimit])
	}
}
