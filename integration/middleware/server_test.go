package middleware

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/ratehttp"
	"github.com/ratelua/ratelua/testbench"
)

// start is the caller clock's time at +0: a whole hour, so that 10-minute
// buckets start with it.
var start = time.Unix(1_800_000_000, 0)

// testClock is a caller clock the test moves.
type testClock struct{ ms atomic.Int64 }

func newClock() *testClock {
	c := &testClock{}
	c.set(0)
	return c
}

func (c *testClock) now() time.Time       { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) set(at time.Duration) { c.ms.Store(start.Add(at).UnixMilli()) }

// response is what the test's HTTP client got.
type response struct {
	status int
	header http.Header
	body   []byte
}

// problemBody is the JSON of a problem response.
type problemBody struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail"`
	Violated []string `json:"violated-policies"`
}

func (r response) problem(t *testing.T) problemBody {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p problemBody
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem body %q: %v", r.body, err)
	}
	return p
}

// serve runs h on a real HTTP server (a loopback TCP listener) for the
// test.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// send makes one request over the network with the given header fields
// ("Name: value").
func send(t *testing.T, method, url string, fields ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		name, value, _ := strings.Cut(f, ": ")
		req.Header.Add(name, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// ok is the protected handler.
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })

// check compares a response's status and rate-limit fields ("" for a
// field that must be absent).
func check(t *testing.T, step string, r response, status int, rateLimit, retryAfter string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d (body %q)", step, r.status, status, r.body)
	}
	if got := r.header.Values("RateLimit"); strings.Join(got, ",") != rateLimit {
		t.Errorf("%s: RateLimit %q, want %q", step, got, rateLimit)
	}
	if got := r.header.Values("Retry-After"); strings.Join(got, ",") != retryAfter {
		t.Errorf("%s: Retry-After %q, want %q", step, got, retryAfter)
	}
}

// TestLoginOverHTTP: seed 002's login case, 1 attempt per 5 s and 5 per
// hour per client address, behind the middleware on a real HTTP server,
// with the limiter on a caller clock: each 429 carries Retry-After equal to
// t, the wait the limiter computed rounded up, and the request at exactly
// that time passes while one a second earlier does not.
func TestLoginOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, client ratelua.Client) {
		clock := newClock()
		logins, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: t.Name(), Clock: clock.now}, login.Windows()...)
		if err != nil {
			t.Fatal(err)
		}
		mw, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Limiter: logins, Name: "login"})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("POST /login", mw.Handler(ok))
		srv := serve(t, mux)
		for _, st := range []struct {
			at                    time.Duration
			status                int
			rateLimit, retryAfter string
		}{
			{0, 200, `"login-5s";r=0;t=5`, ""},
			{time.Second, 429, `"login-5s";r=0;t=4`, "4"},
			{3999 * time.Millisecond, 429, `"login-5s";r=0;t=2`, "2"}, // 1.001 s, rounded up
			{4001 * time.Millisecond, 429, `"login-5s";r=0;t=1`, "1"}, // 0.999 s, rounded up
			{4500 * time.Millisecond, 429, `"login-5s";r=0;t=1`, "1"}, // 0.5 s, rounded up
			{5 * time.Second, 200, `"login-5s";r=0;t=5`, ""},
			{10 * time.Second, 200, `"login-5s";r=0;t=5`, ""},
			{15 * time.Second, 200, `"login-5s";r=0;t=5`, ""},
			{20 * time.Second, 200, `"login-5s";r=0;t=5`, ""}, // the fifth this hour
			{26 * time.Second, 429, `"login-1h";r=0;t=3574`, "3574"},
			{3599 * time.Second, 429, `"login-1h";r=0;t=1`, "1"},
			{3600 * time.Second, 200, `"login-5s";r=0;t=5`, ""}, // the hour's bucket left
		} {
			clock.set(st.at)
			step := "+" + st.at.String()
			r := send(t, "POST", srv.URL+"/login")
			check(t, step, r, st.status, st.rateLimit, st.retryAfter)
			if policy := r.header.Get("RateLimit-Policy"); policy != `"login-5s";q=1;w=5, "login-1h";q=5;w=3600` {
				t.Errorf("%s: RateLimit-Policy %q", step, policy)
			}
			if st.status == 429 {
				p := r.problem(t)
				name, _, _ := strings.Cut(st.rateLimit[1:], `"`)
				if p.Type != "https://iana.org/assignments/http-problem-types#quota-exceeded" || p.Status != 429 ||
					len(p.Violated) != 1 || p.Violated[0] != name {
					t.Errorf("%s: problem %+v, want quota-exceeded violating %q", step, p, name)
				}
			}
		}
	})
}

// TestSeveralLimitersPerRoute: a per-address limiter and a per-user one
// (X-User); a request passes only when both admit; the limiters are asked
// in order and the first that denies ends the request; RateLimit reports
// the limit closest to running out over both.
func TestSeveralLimitersPerRoute(t *testing.T) {
	eachBackend(t, func(t *testing.T, client ratelua.Client) {
		clock := newClock()
		opts := ratelua.Options{Prefix: t.Name(), Clock: clock.now}
		perIP, err1 := ratelua.NewTokenBucket(client, opts, ratelua.Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Minute})
		perUser, err2 := ratelua.NewZSetLog(client, opts, ratelua.Log{Max: 2, Window: time.Minute})
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		mw, err := ratehttp.New(ratehttp.Options{},
			ratehttp.Limit{Limiter: perIP, Name: "ip"},
			ratehttp.Limit{Limiter: perUser, Name: "user", Key: ratehttp.ByHeader("X-User")})
		if err != nil {
			t.Fatal(err)
		}
		srv := serve(t, mw.Handler(ok))
		policy := `"ip";q=3;w=180, "user";q=2;w=60`
		for i, st := range []struct {
			user                  string
			status                int
			rateLimit, retryAfter string
			violated              string
		}{
			{"alice", 200, `"user";r=1;t=60`, "", ""},       // ip has 2 left, user 1
			{"alice", 200, `"user";r=0;t=60`, "", ""},       // ip 1, user 0
			{"alice", 429, `"user";r=0;t=60`, "60", "user"}, // ip admitted (0 left), user denied
			{"", 429, `"ip";r=0;t=60`, "60", "ip"},          // no user: only ip applies
			{"bob", 429, `"ip";r=0;t=60`, "60", "ip"},       // ip denies first; user is not asked
		} {
			var fields []string
			if st.user != "" {
				fields = append(fields, "X-User: "+st.user)
			}
			r := send(t, "GET", srv.URL+"/", fields...)
			step := "request " + strconv.Itoa(i+1) + " " + st.user
			check(t, step, r, st.status, st.rateLimit, st.retryAfter)
			if got := r.header.Get("RateLimit-Policy"); got != policy {
				t.Errorf("%s: RateLimit-Policy %q, want %q", step, got, policy)
			}
			if st.violated != "" {
				if p := r.problem(t); len(p.Violated) != 1 || p.Violated[0] != st.violated {
					t.Errorf("%s: violated %q, want [%s]", step, p.Violated, st.violated)
				}
			}
		}
	})
}

// TestWeightedCosts: a token bucket of 10 refilled 1 per second; a bulk
// request costs 5, a read 1, an export 11 (more than the bucket: never).
// With the legacy fields on, X-RateLimit-* follow the reported limit.
func TestWeightedCosts(t *testing.T) {
	eachBackend(t, func(t *testing.T, client ratelua.Client) {
		clock := newClock()
		bucket, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: t.Name(), Clock: clock.now}, ratelua.PerSecond(1, 10))
		if err != nil {
			t.Fatal(err)
		}
		costs := map[string]int64{"/bulk": 5, "/read": 1, "/export": 11, "/free": 0}
		mw, err := ratehttp.New(ratehttp.Options{Headers: ratehttp.HeadersIETFAndLegacy, Clock: clock.now},
			ratehttp.Limit{Limiter: bucket, Name: "api", Cost: func(r *http.Request) int64 { return costs[r.URL.Path] }})
		if err != nil {
			t.Fatal(err)
		}
		srv := serve(t, mw.Handler(ok))
		for _, st := range []struct {
			path                  string
			at                    time.Duration
			status                int
			rateLimit, retryAfter string
			remaining, reset      string
		}{
			{"/bulk", 0, 200, `"api";r=5;t=5`, "", "5", "1800000005"},
			{"/free", 0, 200, "", "", "", ""}, // costs nothing: not asked, nothing to report
			{"/bulk", 0, 200, `"api";r=0;t=10`, "", "0", "1800000010"},
			{"/read", 0, 429, `"api";r=0;t=1`, "1", "0", "1800000001"},
			{"/read", 500 * time.Millisecond, 429, `"api";r=0;t=1`, "1", "0", "1800000001"},
			{"/read", time.Second, 200, `"api";r=0;t=10`, "", "0", "1800000011"},
			{"/export", 20 * time.Second, 429, `"api";r=10`, "", "10", ""}, // 11 > 10: no t, no Retry-After
		} {
			clock.set(st.at)
			r := send(t, "GET", srv.URL+st.path)
			step := st.path + " at +" + st.at.String()
			check(t, step, r, st.status, st.rateLimit, st.retryAfter)
			if got := r.header.Get("X-RateLimit-Remaining"); got != st.remaining {
				t.Errorf("%s: X-RateLimit-Remaining %q, want %q", step, got, st.remaining)
			}
			if got := r.header.Get("X-RateLimit-Reset"); got != st.reset {
				t.Errorf("%s: X-RateLimit-Reset %q, want %q", step, got, st.reset)
			}
			if st.remaining != "" && r.header.Get("X-RateLimit-Limit") != "10" {
				t.Errorf("%s: X-RateLimit-Limit %q, want 10", step, r.header.Get("X-RateLimit-Limit"))
			}
			if st.path == "/export" {
				if p := r.problem(t); !strings.Contains(p.Detail, "never") {
					t.Errorf("%s: detail %q does not say it can never pass", step, p.Detail)
				}
			}
		}
	})
}

// TestExclusions: Skip passes health checks with no field and no call;
// exempt keys pass a limit; HeadersNone sends no rate-limit field at all;
// Options.Denied replaces the 429 and sees the Denial.
func TestExclusions(t *testing.T) {
	eachBackend(t, func(t *testing.T, client ratelua.Client) {
		clock := newClock()
		opts := ratelua.Options{Prefix: t.Name(), Clock: clock.now}
		once, err1 := ratelua.NewZSetLog(client, opts, ratelua.Log{Max: 1, Window: time.Minute})
		keyed, err2 := ratelua.NewZSetLog(client, opts, ratelua.Log{Max: 1, Window: time.Hour})
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		var denials []ratehttp.Denial
		var mu sync.Mutex
		mw, err := ratehttp.New(ratehttp.Options{
			Skip: func(r *http.Request) bool { return r.URL.Path == "/healthz" },
			Denied: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				d, _ := ratehttp.DenialFrom(r.Context())
				mu.Lock()
				denials = append(denials, d)
				mu.Unlock()
				http.Error(w, "slow down", http.StatusTooManyRequests)
			}),
		},
			ratehttp.Limit{Limiter: once, Name: "ip", Exempt: []string{"192.0.2.1"}},
			ratehttp.Limit{Limiter: keyed, Name: "key", Key: ratehttp.ByHeader("X-Api-Key"), Exempt: []string{"internal"}})
		if err != nil {
			t.Fatal(err)
		}
		quiet, err := ratehttp.New(ratehttp.Options{Headers: ratehttp.HeadersNone}, ratehttp.Limit{Limiter: keyed, Name: "key", Key: ratehttp.ByHeader("X-Api-Key")})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/", mw.Handler(ok))
		mux.Handle("/quiet", quiet.Handler(ok))
		srv := serve(t, mux)

		for range 3 {
			if r := send(t, "GET", srv.URL+"/healthz"); r.status != 200 || r.header.Get("RateLimit-Policy") != "" {
				t.Errorf("/healthz: %d %v", r.status, r.header)
			}
		}
		check(t, "first", send(t, "GET", srv.URL+"/"), 200, `"ip";r=0;t=60`, "")
		r := send(t, "GET", srv.URL+"/")
		check(t, "second", r, 429, `"ip";r=0;t=60`, "60")
		if string(r.body) != "slow down\n" || len(denials) != 1 || denials[0].Policies[0] != "ip" || denials[0].Result.RetryAfter != time.Minute {
			t.Errorf("Denied handler: body %q, denials %+v", r.body, denials)
		}
		// The loopback peer is not exempt from "ip"; an exempt API key
		// passes "key" however often.
		for i := range 4 {
			clock.set(time.Duration(i+1) * 61 * time.Second)
			check(t, "internal key", send(t, "GET", srv.URL+"/", "X-Api-Key: internal"), 200, `"ip";r=0;t=60`, "")
		}
		// HeadersNone: nothing tells the client how many tries are left.
		first := send(t, "GET", srv.URL+"/quiet", "X-Api-Key: k1")
		second := send(t, "GET", srv.URL+"/quiet", "X-Api-Key: k1")
		if first.status != 200 || second.status != 429 {
			t.Errorf("/quiet: %d then %d, want 200 then 429", first.status, second.status)
		}
		if p := second.problem(t); p.Detail != "" {
			t.Errorf("/quiet: the 429 body tells %q", p.Detail)
		}
		for _, r := range []response{first, second} {
			for name := range r.header {
				if strings.Contains(strings.ToLower(name), "ratelimit") || name == "Retry-After" {
					t.Errorf("/quiet sent %s: %q", name, r.header.Values(name))
				}
			}
		}
	})
}

// TestServerRefusesOrIsDown: a server's error reply (NOPERM: the ACL user
// may not run scripts) is never admitted, even by a FailOpen limiter (503);
// once the server is killed, a FailOpen limiter admits (200) and a
// fail-closed one answers 503; OnError sees every error.
func TestServerRefusesOrIsDown(t *testing.T) {
	for _, kind := range harness.Families() {
		t.Run(string(kind), func(t *testing.T) {
			node := testbench.StartSingle(t, testbench.Options{Kind: kind})
			ctx := t.Context()
			if _, err := node.Do(ctx, "ACL", "SETUSER", "noscripts", "on", "nopass", "~*", "+@all", "-@scripting"); err != nil {
				t.Fatal(err)
			}
			dial := func(user string) ratelua.Client {
				c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, Username: user, DisableCache: true,
					Dialer: net.Dialer{Timeout: time.Second}, ConnWriteTimeout: 2 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				return ratelua.Rueidis(c)
			}
			var errs []error
			var mu sync.Mutex
			onError := func(r *http.Request, err error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			build := func(client ratelua.Client, failOpen bool) http.Handler {
				l, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "down", FailOpen: failOpen}, ratelua.PerSecond(100, 100))
				if err != nil {
					t.Fatal(err)
				}
				mw, err := ratehttp.New(ratehttp.Options{OnError: onError}, ratehttp.Limit{Limiter: l, Name: "api"})
				if err != nil {
					t.Fatal(err)
				}
				return mw.Handler(ok)
			}
			mux := http.NewServeMux()
			mux.Handle("/refused", build(dial("noscripts"), true))
			mux.Handle("/open", build(dial("default"), true))
			mux.Handle("/closed", build(dial("default"), false))
			srv := serve(t, mux)

			for _, path := range []string{"/open", "/closed"} {
				if r := send(t, "GET", srv.URL+path); r.status != 200 {
					t.Fatalf("%s with the server up: %d %q", path, r.status, r.body)
				}
			}
			r := send(t, "GET", srv.URL+"/refused")
			if r.status != 503 || r.problem(t).Status != 503 || len(errs) != 1 || !errors.Is(errs[0], ratelua.ErrScript) {
				t.Errorf("NOPERM under FailOpen: %d %q, errors %v; want 503 and one ErrScript", r.status, r.body, errs)
			}
			if err := node.Kill(); err != nil {
				t.Fatal(err)
			}
			open, closed := send(t, "GET", srv.URL+"/open"), send(t, "GET", srv.URL+"/closed")
			if open.status != 200 || open.header.Get("RateLimit") != "" || open.header.Get("RateLimit-Policy") == "" {
				t.Errorf("FailOpen, server down: %d %v, want 200 with the policy and no RateLimit", open.status, open.header)
			}
			if closed.status != 503 {
				t.Errorf("fail-closed, server down: %d %q, want 503", closed.status, closed.body)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(errs) != 3 || !errors.Is(errs[1], ratelua.ErrUnavailable) || !errors.Is(errs[2], ratelua.ErrUnavailable) {
				t.Errorf("OnError saw %v, want ErrScript then two ErrUnavailable", errs)
			}
		})
	}
}
