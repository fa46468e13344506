package rateotel

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// collect reads every data point of the reader into "instrument|attrs" ->
// value (sums) or count (histograms), and checks the scope.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName || sm.Scope.Version != Version() || sm.Scope.Version == "" {
			t.Errorf("scope %q version %q, want %q %q", sm.Scope.Name, sm.Scope.Version, ScopeName, Version())
		}
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					out[m.Name+"|"+render(dp.Attributes)] += dp.Value
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					out[m.Name+"|"+render(dp.Attributes)] += int64(dp.Count)
				}
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// render writes attributes as k=v sorted by key.
func render(set attribute.Set) string {
	var parts []string
	for _, kv := range set.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// decisions is the key of a ratelua.decisions data point.
func decisions(script, prefix, result string, limit int, allowed, local bool) string {
	return fmt.Sprintf("ratelua.decisions|ratelua.allowed=%v,ratelua.limit=%d,ratelua.local=%v,ratelua.prefix=%s,ratelua.result=%s,ratelua.script=%s",
		allowed, limit, local, prefix, result, script)
}

// TestMetricsOfAScriptedSequence: the exact count of every kind of
// decision per script, prefix and limit, of script loads and of the
// fallback, in the OTel SDK's reader after a scripted sequence on a real
// redis-server and valkey-server, with a span per decision under the
// caller's span; no attribute holds an event key.
func TestMetricsOfAScriptedSequence(t *testing.T) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			node := testbench.StartSingle(t, testbench.Options{Kind: kind})
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)

			reader := sdkmetric.NewManualReader()
			meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			spans := tracetest.NewSpanRecorder()
			tracers := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			obs, err := New(WithMeterProvider(meters), WithTracerProvider(tracers), WithSpans())
			if err != nil {
				t.Fatal(err)
			}
			ctx, parent := tracers.Tracer("test").Start(context.Background(), "request")

			now := time.Unix(1_800_000_000, 0)
			opts := func(prefix string) ratelua.Options {
				return ratelua.Options{Prefix: prefix, Clock: func() time.Time { return now }, Observe: obs.Observe}
			}
			windows := []ratelua.Window{{Max: 3, Duration: time.Minute, Resolution: time.Second}, {Max: 5, Duration: time.Hour, Resolution: time.Minute}}
			bucket := ratelua.Bucket{Capacity: 2, RefillAmount: 1, RefillInterval: time.Minute}
			sw := func(o ratelua.Options) *ratelua.Limiter {
				l, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), o, windows...)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			tb := func(o ratelua.Options) *ratelua.Limiter {
				l, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), o, bucket)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			dry := opts("dry")
			dry.DryRun = true
			cached := opts("cached")
			cached.DenyCache = 100
			fallback := opts("fallback")
			fallback.Fallback = 0.5
			swEnforce, swDry, swFallback := sw(opts("enforce")), sw(dry), sw(fallback)
			tbEnforce, tbDry, tbCached := tb(opts("enforce")), tb(dry), tb(cached)
			allow := func(l *ratelua.Limiter, key string, times int) {
				for range times {
					if _, err := l.Allow(ctx, key); err != nil {
						t.Fatal(err)
					}
				}
			}
			// 3 per minute, then the 5 per hour: the first limit decides
			// (3 admitted, 1 denied), a minute later the second (2, 1).
			for _, l := range []*ratelua.Limiter{swEnforce, swDry} {
				allow(l, "alice", 4)
			}
			for _, l := range []*ratelua.Limiter{tbEnforce, tbDry} {
				allow(l, "alice", 3)
			}
			allow(tbCached, "alice", 4) // the fourth answered by the deny cache
			now = now.Add(61 * time.Second)
			for _, l := range []*ratelua.Limiter{swEnforce, swDry} {
				allow(l, "alice", 3)
			}

			// The server goes away: the fallback (half of each limit: 1
			// per minute, 2 per hour) decides, from the first failure.
			if err := node.Stop(); err != nil {
				t.Fatal(err)
			}
			allow(swFallback, "bob", 4)
			during := collect(t, reader)
			active := "ratelua.fallback.active|ratelua.prefix=fallback,ratelua.script=" + swFallback.Script().String()
			if during[active] != 1 {
				t.Errorf("during the outage %s = %d, want 1", active, during[active])
			}
			if err := node.Restart(context.Background()); err != nil {
				t.Fatal(err)
			}
			// Until the client has reconnected, through a limiter nobody
			// observes, on bob's slot (rueidis multiplexes a node over
			// several connections: one answer says nothing of the
			// connection bob's call takes); then the fallback's next call
			// meets the server.
			poll, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "poll"}, bucket)
			if err != nil {
				t.Fatal(err)
			}
			// Twenty answers in a row, so that every connection the
			// client may pick has reconnected.
			for i, answered := 0, 0; answered < 20; i++ {
				if _, err := poll.Peek(ctx, "bob"); err == nil {
					answered++
					continue
				}
				answered = 0
				if i == 1000 {
					t.Fatal("the server did not come back")
				}
				time.Sleep(20 * time.Millisecond)
			}
			allow(swFallback, "bob", 1)
			parent.End()

			s, b := swEnforce.Script().String(), tbEnforce.Script().String()
			want := map[string]int64{
				decisions(s, "enforce", "allowed", 0, true, false): 3,
				decisions(s, "enforce", "denied", 0, false, false): 1,
				decisions(s, "enforce", "allowed", 1, true, false): 2,
				decisions(s, "enforce", "denied", 1, false, false): 1,
				decisions(s, "dry", "allowed", 0, true, false):     3,
				decisions(s, "dry", "dry_run", 0, true, false):     1,
				decisions(s, "dry", "allowed", 1, true, false):     2,
				decisions(s, "dry", "dry_run", 1, true, false):     1,
				// With FallbackAfter 0 each call asks the server first.
				decisions(s, "fallback", "fallback", 0, true, false):  1,
				decisions(s, "fallback", "fallback", 0, false, false): 3,
				decisions(s, "fallback", "allowed", 0, true, false):   1,
				decisions(b, "enforce", "allowed", 0, true, false):    2,
				decisions(b, "enforce", "denied", 0, false, false):    1,
				decisions(b, "dry", "allowed", 0, true, false):        2,
				decisions(b, "dry", "dry_run", 0, true, false):        1,
				decisions(b, "cached", "allowed", 0, true, false):     2,
				decisions(b, "cached", "denied", 0, false, false):     1,
				decisions(b, "cached", "denied", 0, false, true):      1,
				// The first call of each script on the fresh server, and
				// the first after the restart (scripts are not saved).
				"ratelua.script.loads|ratelua.prefix=enforce,ratelua.script=" + s:  1,
				"ratelua.script.loads|ratelua.prefix=enforce,ratelua.script=" + b:  1,
				"ratelua.script.loads|ratelua.prefix=fallback,ratelua.script=" + s: 1,
				active: 0,
			}
			var total int64
			histograms := map[string]int64{}
			for k, v := range want {
				if !strings.HasPrefix(k, "ratelua.decisions|") {
					continue
				}
				total += v
				attrs := strings.Split(strings.TrimPrefix(k, "ratelua.decisions|"), ",")
				histograms["ratelua.decision.duration|"+attrs[3]+","+attrs[4]+","+attrs[5]] += v
			}
			for k, v := range histograms {
				want[k] = v
			}
			got := collect(t, reader)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d", k, got[k], v)
				}
			}
			for k, v := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("unexpected data point %s = %d", k, v)
				}
				if strings.Contains(k, "alice") || strings.Contains(k, "bob") {
					t.Errorf("an event key in %s", k)
				}
			}
			t.Logf("%s: %d decisions counted exactly in %d data points", kind, total, len(got))

			var ended int64
			for _, span := range spans.Ended() {
				if span.Name() != "ratelua.decision" {
					continue
				}
				ended++
				if span.Parent().SpanID() != parent.SpanContext().SpanID() {
					t.Errorf("span %v is not a child of the caller's", span.SpanContext().SpanID())
				}
				if span.EndTime().Before(span.StartTime()) {
					t.Errorf("span ends before it starts")
				}
				for _, kv := range span.Attributes() {
					if v := kv.Value.Emit(); v == "alice" || v == "bob" {
						t.Errorf("an event key in span attribute %s", kv.Key)
					}
				}
			}
			if ended != total {
				t.Errorf("%d decision spans, want %d", ended, total)
			}
		})
	}
}

// TestDefaultsToGlobalProviders: New with no option uses the global
// providers (no-ops unless set) and observes without failing.
func TestDefaultsToGlobalProviders(t *testing.T) {
	obs, err := New(WithSpans())
	if err != nil {
		t.Fatal(err)
	}
	obs.Observe(context.Background(), ratelua.Event{Kind: ratelua.KindError, Script: "x@v1", Prefix: "p", Result: ratelua.Result{Limit: -1}})
	obs.Observe(context.Background(), ratelua.Event{Kind: ratelua.KindLoad, Script: "x@v1", Prefix: "p", Err: ratelua.ErrUnavailable})
	if Version() == "" {
		t.Error("empty version")
	}
}

// BenchmarkObserve: what the Observer adds to a decision, with the SDK's
// meter provider (metrics only, and with a span per decision).
func BenchmarkObserve(b *testing.B) {
	e := ratelua.Event{Kind: ratelua.KindDenied, Script: "token_bucket@v2", Prefix: "api", N: 1,
		Result: ratelua.Result{Limit: 0, RetryAfter: time.Second}, Latency: 300 * time.Microsecond}
	for _, withSpans := range []bool{false, true} {
		b.Run(fmt.Sprintf("spans=%v", withSpans), func(b *testing.B) {
			meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			opts := []Option{WithMeterProvider(meters)}
			if withSpans {
				tracers := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
				opts = append(opts, WithTracerProvider(tracers), WithSpans())
			}
			obs, err := New(opts...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				obs.Observe(ctx, e)
			}
		})
	}
}
