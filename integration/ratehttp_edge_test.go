package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/ratehttp"
	"github.com/ratelua/ratelua/testbench"
)

// edgeRun numbers the prefixes of the edge cases, so that runs of one
// test binary (-count) never share a limiter's state.
var edgeRun atomic.Int64

// onEachFamily runs f on a rueidis client of each family's single node.
func onEachFamily(t *testing.T, f func(t *testing.T, client ratelua.Client, node *testbench.Node, prefix string)) {
	for _, kind := range harness.Families() {
		t.Run(string(kind), func(t *testing.T) {
			node := h.Node(t, kind)
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			f(t, ratelua.Rueidis(c), node, fmt.Sprintf("edge-%d-%s", edgeRun.Add(1), strings.ReplaceAll(t.Name(), "/", "-")))
		})
	}
}

// hourly is a limiter of max events per hour on the node.
func hourly(t *testing.T, client ratelua.Client, prefix string, max int64, opts ratelua.Options) *ratelua.Limiter {
	t.Helper()
	opts.Prefix = prefix
	l, err := ratelua.NewSlidingWindow(client, opts, ratelua.Window{Max: max, Duration: time.Hour, Resolution: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// listen serves h on a loopback port over real TCP until the test ends,
// and returns the address.
func listen(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// exchange sends one request with the header lines over a new TCP
// connection, half-closing it (CloseWrite) after the request when
// halfClose, and reads the response.
func exchange(t *testing.T, addr string, headers []string, halfClose bool) *http.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "POST /login HTTP/1.1\r\nHost: edge.test\r\nContent-Length: 0\r\nConnection: close\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })

// TestHalfClosedClientsDoNotPassFailOpen (row 2): a client that sends its
// login and half-closes the connection cancels the request's context; under
// a FailOpen limiter that must not admit it, since the server was never
// unable to answer. 30 such logins against 1 per hour: at most 1 passes.
// The handler in front waits until the request's context is done, so every
// request reaches the limiter as the attack makes it: cancelled.
func TestHalfClosedClientsDoNotPassFailOpen(t *testing.T) {
	onEachFamily(t, func(t *testing.T, client ratelua.Client, _ *testbench.Node, prefix string) {
		logins := hourly(t, client, prefix, 1, ratelua.Options{FailOpen: true})
		mw, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Limiter: logins, Name: "login"})
		if err != nil {
			t.Fatal(err)
		}
		var cancelled atomic.Int64
		limited := mw.Handler(okHandler)
		addr := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Wait-Hangup") != "" {
				select {
				case <-r.Context().Done():
					cancelled.Add(1)
				case <-time.After(30 * time.Second): // a generous bound: the hang-up comes at once
				}
			}
			limited.ServeHTTP(w, r)
		}))
		passed := 0
		for range 30 {
			if resp := exchange(t, addr, []string{"X-Wait-Hangup: 1"}, true); resp.StatusCode == http.StatusOK {
				passed++
			}
		}
		if passed > 1 || cancelled.Load() != 30 {
			t.Errorf("%d of 30 half-closed logins passed a 1-per-hour FailOpen limit (%d reached it cancelled); want at most 1 of 30 cancelled", passed, cancelled.Load())
		}
		// The limit still holds for clients that wait for the answer.
		if first := exchange(t, addr, nil, false); passed == 0 && first.StatusCode != http.StatusOK {
			t.Errorf("the first complete login: %s, want 200", first.Status)
		}
		if again := exchange(t, addr, nil, false); again.StatusCode != http.StatusTooManyRequests {
			t.Errorf("a login past the limit: %s, want 429", again.Status)
		}
	})
}

// TestForwardedKeyIsNotTheClients (row 1): behind a trusted proxy (the
// test, on loopback) that appends its element to the client's Forwarded
// field, a client whose own element opens a quote that never closes must
// not choose its key: rotating the for= it writes gets one login per
// hour, not one per value.
func TestForwardedKeyIsNotTheClients(t *testing.T) {
	onEachFamily(t, func(t *testing.T, client ratelua.Client, _ *testbench.Node, prefix string) {
		logins := hourly(t, client, prefix, 1, ratelua.Options{})
		var keys []string
		mw, err := ratehttp.New(ratehttp.Options{TrustedProxies: []string{"127.0.0.1"}, ProxyHeader: "Forwarded"},
			ratehttp.Limit{Limiter: logins, Name: "login"})
		if err != nil {
			t.Fatal(err)
		}
		limited := mw.Handler(okHandler)
		addr := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			keys = append(keys, mw.ClientKey(r))
			limited.ServeHTTP(w, r)
		}))
		passed := 0
		for i := range 10 {
			// The client wrote `for=9.9.9.i;x="`; the proxy appended ", for=1.2.3.4".
			h := fmt.Sprintf(`Forwarded: for=9.9.9.%d;x=", for=1.2.3.4`, i)
			if resp := exchange(t, addr, []string{h}, false); resp.StatusCode == http.StatusOK {
				passed++
			}
		}
		for _, k := range keys {
			if strings.HasPrefix(k, "9.9.9.") {
				t.Errorf("key %s: a value the client wrote", k)
				break
			}
		}
		if passed != 1 {
			t.Errorf("%d of 10 logins with rotating client-written for= passed a 1-per-hour limit, want 1 (keys %v)", passed, keys)
		}
	})
}

// TestDryRunLimitChangesNothingAClientSees (row 7): a dry-run limit past
// its quota still records, but the responses carry only the enforcing
// limit's fields: no r=0, no X-RateLimit-Remaining: 0, no policy of its
// own.
func TestDryRunLimitChangesNothingAClientSees(t *testing.T) {
	onEachFamily(t, func(t *testing.T, client ratelua.Client, _ *testbench.Node, prefix string) {
		api := hourly(t, client, prefix+"-api", 5, ratelua.Options{})
		strict := hourly(t, client, prefix+"-strict", 1, ratelua.Options{DryRun: true})
		mw, err := ratehttp.New(ratehttp.Options{Headers: ratehttp.HeadersIETFAndLegacy},
			ratehttp.Limit{Limiter: api, Name: "api"}, ratehttp.Limit{Limiter: strict, Name: "strict"})
		if err != nil {
			t.Fatal(err)
		}
		addr := listen(t, mw.Handler(okHandler))
		for i := range 3 {
			resp := exchange(t, addr, nil, false)
			want := map[string]string{
				"RateLimit-Policy":      `"api";q=5;w=3600`,
				"X-RateLimit-Limit":     "5",
				"X-RateLimit-Remaining": fmt.Sprint(4 - i),
			}
			if resp.StatusCode != http.StatusOK {
				t.Errorf("request %d: %s, want 200", i+1, resp.Status)
			}
			// t is the api window's rest, at most an hour (buckets of a minute).
			var r, sec int
			if _, err := fmt.Sscanf(resp.Header.Get("RateLimit"), `"api";r=%d;t=%d`, &r, &sec); err != nil || r != 4-i || sec < 3540 || sec > 3600 {
				t.Errorf("request %d: RateLimit: %q, want \"api\";r=%d;t= within the hour", i+1, resp.Header.Get("RateLimit"), 4-i)
			}
			for name, v := range want {
				if got := resp.Header.Get(name); got != v {
					t.Errorf("request %d: %s: %q, want %q", i+1, name, got, v)
				}
			}
		}
		// The dry-run limit did decide and record: it would deny now.
		r, err := strict.Peek(context.Background(), "127.0.0.1")
		if err != nil || !r.DryRunDenied {
			t.Errorf("the dry-run limiter after 3 requests: %+v, %v; want DryRunDenied", r, err)
		}
	})
}

// TestCostAboveAnyQuotaIsNever (row 12): every cost above a policy's quota
// is a 429 that can never pass, however large: 2^52, 2^52+1 and
// 2^63-1 alike, never a 503.
func TestCostAboveAnyQuotaIsNever(t *testing.T) {
	onEachFamily(t, func(t *testing.T, client ratelua.Client, _ *testbench.Node, prefix string) {
		api := hourly(t, client, prefix, 5, ratelua.Options{})
		var errs atomic.Int64
		mw, err := ratehttp.New(ratehttp.Options{OnError: func(*http.Request, error) { errs.Add(1) }},
			ratehttp.Limit{Limiter: api, Name: "api", Cost: func(r *http.Request) int64 {
				var n int64
				fmt.Sscan(r.Header.Get("X-Cost"), &n)
				return n
			}})
		if err != nil {
			t.Fatal(err)
		}
		addr := listen(t, mw.Handler(okHandler))
		for _, cost := range []string{"6", "4503599627370496", "4503599627370497", "9223372036854775807"} {
			resp := exchange(t, addr, []string{"X-Cost: " + cost}, false)
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "" {
				t.Errorf("cost %s: %s, Retry-After %q; want 429 without Retry-After (never)", cost, resp.Status, resp.Header.Get("Retry-After"))
			}
		}
		if errs.Load() != 0 {
			t.Errorf("%d limiter errors for costs over the quota, want none", errs.Load())
		}
		// Nothing was recorded: a request of cost 5 still passes.
		if resp := exchange(t, addr, []string{"X-Cost: 5"}, false); resp.StatusCode != http.StatusOK {
			t.Errorf("cost 5 after the refusals: %s, want 200", resp.Status)
		}
	})
}
