package rateotel

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/rueidis"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/ratehttp"
	"github.com/ratelua/ratelua/testbench"
)

// TestMetricsThroughTheHTTPMiddleware: requests through ratehttp reach the
// reader as the limiter's decisions, with the exact counts: the login case
// (1 per 5 s and 5 per hour) admits the first request and denies the next
// two on the 5 s limit; a dry-run limiter on the same route admits all
// three and reports the two it would have denied.
func TestMetricsThroughTheHTTPMiddleware(t *testing.T) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			node := testbench.StartSingle(t, testbench.Options{Kind: kind})
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			reader := sdkmetric.NewManualReader()
			obs, err := New(WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Unix(1_800_000_000, 0)
			login := []ratelua.Window{{Max: 1, Duration: 5 * time.Second, Resolution: time.Second}, {Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute}}
			limiter := func(prefix string, dryRun bool) *ratelua.Limiter {
				l, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client),
					ratelua.Options{Prefix: prefix, Clock: func() time.Time { return now }, Observe: obs.Observe, DryRun: dryRun}, login...)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			// The dry-run limiter first: it admits, so the enforcing one
			// decides every request.
			dry, enforcing := limiter("http-dry", true), limiter("http-login", false)
			script := enforcing.Script().String() // the default version, sliding_window@vN
			mw, err := ratehttp.New(ratehttp.Options{},
				ratehttp.Limit{Limiter: dry, Name: "dry"},
				ratehttp.Limit{Limiter: enforcing, Name: "login"})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})))
			t.Cleanup(srv.Close)
			var codes []int
			for range 3 {
				resp, err := http.Post(srv.URL+"/login", "text/plain", nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				codes = append(codes, resp.StatusCode)
			}
			if codes[0] != 200 || codes[1] != 429 || codes[2] != 429 {
				t.Fatalf("status codes %v, want 200 429 429", codes)
			}
			got := collect(t, reader)
			for key, want := range map[string]int64{
				decisions(script, "http-login", "allowed", 0, true, false): 1,
				decisions(script, "http-login", "denied", 0, false, false): 2,
				decisions(script, "http-dry", "allowed", 0, true, false):   1,
				decisions(script, "http-dry", "dry_run", 0, true, false):   2,
			} {
				if got[key] != want {
					t.Errorf("%s = %d, want %d", key, got[key], want)
				}
			}
			if t.Failed() {
				for k, v := range got {
					t.Logf("%s = %d", k, v)
				}
			}
		})
	}
}
