package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/ratelua/ratelua/rls/settings"
	"github.com/ratelua/ratelua/rls/tracing"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes each export
// request and keeps the spans, by name, with their service.name.
type otlpReceiver struct {
	mu    sync.Mutex
	spans map[string]int // "service.name/span name" -> count
	err   error
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil || r.URL.Path != "/v1/traces" {
		o.err = err
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				o.spans[service+"/"+sp.Name]++
			}
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// TestTracingExportsSpans: with TRACING_ENABLED the server exports a span
// for each ShouldRateLimit over OTLP/HTTP (the endpoint from
// OTEL_EXPORTER_OTLP_ENDPOINT, read by the exporter) with
// TRACING_SERVICE_NAME; with TRACING_SAMPLING_RATE=0 none, as the
// reference's sampler. The spans are counted after the server stopped,
// which flushes them.
func TestTracingExportsSpans(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int
	}{{1, 5}, {0, 0}} {
		t.Run("rate "+strconv.FormatFloat(c.rate, 'g', -1, 64), func(t *testing.T) {
			rec := &otlpReceiver{spans: map[string]int{}}
			hs := httptest.NewServer(rec)
			defer hs.Close()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hs.URL)
			t.Run("serve", func(t *testing.T) {
				s := settings.Settings{Tracing: settings.TracingSettings{Enabled: true, Protocol: "http",
					ServiceName: "rls-under-test", SamplingRate: c.rate}}
				srv, cfg, _ := runServer(t, s)
				install(t, cfg, "d.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 100}\n")
				pollHealth(t, srv, "the configuration loaded", func(code int, _ string) bool {
					return code == 200 && hasRule(srv.Service().Config(), "d.k")
				})
				conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(srv.settings.GRPCPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				for i := 0; i < 5; i++ {
					if _, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "d",
						Descriptors: []*rlpb.RateLimitDescriptor{{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}}); err != nil {
						t.Fatal(err)
					}
				}
			})
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.err != nil {
				t.Fatalf("receiver: %v", rec.err)
			}
			if got := rec.spans["rls-under-test/"+tracing.SpanName]; got != c.want || len(rec.spans) > 1 {
				t.Fatalf("spans %v: want %d of rls-under-test/%s", rec.spans, c.want, tracing.SpanName)
			}
		})
	}
}
