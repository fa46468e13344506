package sfvtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/ratehttp"
	"github.com/ratelua/ratelua/testbench"
)

// policyParams is a RateLimit-Policy member as parsed.
type policyParams struct {
	q, w int64
}

// fields checks every rate-limit field of one response against RFC 9651
// and the draft, and returns the RateLimit members it holds (name -> r, t
// with t -1 when absent).
func fields(t *testing.T, step string, status int, h http.Header, body []byte) map[string][2]int64 {
	t.Helper()
	policies := map[string]policyParams{}
	if v := h.Values("RateLimit-Policy"); len(v) > 0 {
		list, err := httpsfv.UnmarshalList(v)
		if err != nil || len(list) == 0 {
			t.Fatalf("%s: RateLimit-Policy %q is not a non-empty List: %v", step, v, err)
		}
		for _, member := range list {
			item, ok := member.(httpsfv.Item)
			name, isString := item.Value.(string)
			if !ok || !isString {
				t.Fatalf("%s: RateLimit-Policy member %#v is not an Item whose value is a String", step, member)
			}
			q, okQ := integer(item.Params, "q")
			w, okW := integer(item.Params, "w")
			if !okQ || q < 0 || !okW || w <= 0 {
				t.Errorf("%s: policy %q: q %v (%v), w %v (%v): want q a non-negative Integer and w a positive one", step, name, q, okQ, w, okW)
			}
			for _, p := range item.Params.Names() {
				if p != "q" && p != "w" {
					t.Errorf("%s: policy %q has parameter %q", step, name, p)
				}
			}
			policies[name] = policyParams{q, w}
		}
	}
	limits := map[string][2]int64{}
	if v := h.Values("RateLimit"); len(v) > 0 {
		list, err := httpsfv.UnmarshalList(v)
		if err != nil || len(list) == 0 {
			t.Fatalf("%s: RateLimit %q is not a non-empty List: %v", step, v, err)
		}
		for _, member := range list {
			item, ok := member.(httpsfv.Item)
			name, isString := item.Value.(string)
			if !ok || !isString {
				t.Fatalf("%s: RateLimit member %#v is not an Item whose value is a String", step, member)
			}
			if _, known := policies[name]; !known {
				t.Errorf("%s: RateLimit names %q, not a policy of RateLimit-Policy %v", step, name, policies)
			}
			r, okR := integer(item.Params, "r")
			if !okR || r < 0 || r > policies[name].q {
				t.Errorf("%s: RateLimit %q: r %v (%v), want an Integer in [0, q]", step, name, r, okR)
			}
			tt := int64(-1)
			if _, present := item.Params.Get("t"); present {
				var okT bool
				if tt, okT = integer(item.Params, "t"); !okT || tt < 0 {
					t.Errorf("%s: RateLimit %q: t %v, want a non-negative Integer", step, name, tt)
				}
			}
			limits[name] = [2]int64{r, tt}
		}
	}
	if v := h.Values("Retry-After"); len(v) > 0 {
		item, err := httpsfv.UnmarshalItem(v)
		seconds, isInt := item.Value.(int64)
		if err != nil || !isInt || seconds < 0 {
			t.Fatalf("%s: Retry-After %q is not delay-seconds: %v", step, v, err)
		}
		if status != http.StatusTooManyRequests {
			t.Errorf("%s: Retry-After on a %d", step, status)
		}
		for name, rt := range limits {
			if rt[1] < 0 || seconds < rt[1] {
				t.Errorf("%s: Retry-After %d is earlier than the end of %q's effective window (t %d)", step, seconds, name, rt[1])
			}
		}
	}
	for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if v := h.Values(name); len(v) > 0 {
			item, err := httpsfv.UnmarshalItem(v)
			if n, ok := item.Value.(int64); err != nil || !ok || n < 0 {
				t.Errorf("%s: %s %q is not a non-negative Integer: %v", step, name, v, err)
			}
		}
	}
	if status == http.StatusTooManyRequests && h.Get("Content-Type") == "application/problem+json" {
		var p struct {
			Type     string   `json:"type"`
			Violated []string `json:"violated-policies"`
		}
		if err := json.Unmarshal(body, &p); err != nil || p.Type != "https://iana.org/assignments/http-problem-types#quota-exceeded" || len(p.Violated) == 0 {
			t.Errorf("%s: problem body %s: %v", step, body, err)
		}
		for _, name := range p.Violated {
			if _, known := policies[name]; !known && len(policies) > 0 {
				t.Errorf("%s: violated policy %q is not in RateLimit-Policy", step, name)
			}
		}
	}
	return limits
}

// integer reads an Integer parameter.
func integer(p *httpsfv.Params, name string) (int64, bool) {
	v, ok := p.Get(name)
	n, isInt := v.(int64)
	return n, ok && isInt
}

// testClock is a caller clock the test moves.
type testClock struct{ ms atomic.Int64 }

func (c *testClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) at(d time.Duration) {
	c.ms.Store(time.Unix(1_800_000_000, 0).Add(d).UnixMilli())
}

// exchange sends one request and checks its fields.
func exchange(t *testing.T, url string, fieldLines ...string) (int, map[string][2]int64) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fieldLines {
		name, value, _ := strings.Cut(f, ": ")
		req.Header.Add(name, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, fields(t, req.URL.Path+" "+strings.Join(fieldLines, " "), resp.StatusCode, resp.Header, body)
}

// TestFieldsParse drives the middleware on real redis-server and
// valkey-server processes through allowed, denied, never-admitted and
// recovered requests, several limiters, names that need escaping and the
// legacy fields, and parses every field it sends.
func TestFieldsParse(t *testing.T) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			node := testbench.StartSingle(t, testbench.Options{Kind: kind})
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			client := ratelua.Rueidis(rc)
			clock := &testClock{}
			clock.at(0)
			opts := ratelua.Options{Prefix: "sfv", Clock: clock.now}
			login, err1 := ratelua.NewSlidingWindow(client, opts,
				ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
				ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
			perUser, err2 := ratelua.NewZSetLog(client, opts, ratelua.Log{Max: 2, Window: time.Minute}, ratelua.Log{Max: 3, Window: 1500 * time.Millisecond})
			bucket, err3 := ratelua.NewTokenBucket(client, opts, ratelua.PerSecond(1, 10))
			decay, err4 := ratelua.NewAR1(client, opts, ratelua.Decay{Max: 3, Factor: 2, Resolution: time.Second})
			for _, err := range []error{err1, err2, err3, err4} {
				if err != nil {
					t.Fatal(err)
				}
			}
			build := func(o ratehttp.Options, limits ...ratehttp.Limit) http.Handler {
				mw, err := ratehttp.New(o, limits...)
				if err != nil {
					t.Fatal(err)
				}
				return mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			}
			cost := func(r *http.Request) int64 {
				var n int64
				fmt.Sscan(r.URL.Query().Get("cost"), &n)
				return n
			}
			mux := http.NewServeMux()
			mux.Handle("/login", build(ratehttp.Options{}, ratehttp.Limit{Limiter: login, Name: "login"}))
			mux.Handle("/multi", build(ratehttp.Options{Headers: ratehttp.HeadersIETFAndLegacy, Clock: clock.now},
				ratehttp.Limit{Limiter: bucket, Name: `api "v2"`, Cost: cost},
				ratehttp.Limit{Limiter: perUser, Names: []string{`user\minute`, "user burst"}, Key: ratehttp.ByHeader("X-User")},
				ratehttp.Limit{Limiter: decay, Name: "decay"}))
			srv := httptest.NewServer(mux)
			defer srv.Close()

			// The login case: t and Retry-After agree with the limiter.
			for _, st := range []struct {
				at     time.Duration
				status int
				name   string
				r, t   int64
			}{
				{0, 200, "login-5s", 0, 5}, {time.Second, 429, "login-5s", 0, 4}, {4500 * time.Millisecond, 429, "login-5s", 0, 1},
				{5 * time.Second, 200, "login-5s", 0, 5}, {10 * time.Second, 200, "login-5s", 0, 5}, {15 * time.Second, 200, "login-5s", 0, 5},
				{20 * time.Second, 200, "login-5s", 0, 5}, {26 * time.Second, 429, "login-1h", 0, 3574}, {time.Hour, 200, "login-5s", 0, 5},
			} {
				clock.at(st.at)
				status, limits := exchange(t, srv.URL+"/login")
				if status != st.status || len(limits) != 1 || limits[st.name] != [2]int64{st.r, st.t} {
					t.Errorf("/login at +%v: %d %v, want %d %s r=%d t=%d", st.at, status, limits, st.status, st.name, st.r, st.t)
				}
			}
			// Several limiters, weights, a cost that can never pass, a
			// decaying count, names with quotes and backslashes.
			clock.at(0)
			seen := map[int]int{}
			for i, st := range []struct{ query, user string }{
				{"cost=3", "alice"}, {"cost=3", "alice"}, {"cost=3", "alice"}, {"cost=11", ""},
				{"cost=1", "bob"}, {"cost=0", "carol"}, {"cost=2", "carol"}, {"cost=1", "dave"},
			} {
				clock.at(time.Duration(i) * 100 * time.Millisecond)
				var lines []string
				if st.user != "" {
					lines = append(lines, "X-User: "+st.user)
				}
				status, _ := exchange(t, srv.URL+"/multi?"+st.query, lines...)
				seen[status]++
			}
			if seen[200] == 0 || seen[429] == 0 {
				t.Errorf("/multi answered %v: want both passes and denials", seen)
			}
		})
	}
}

// unreachable is a Client whose server never answers.
type unreachable struct{}

func (unreachable) Run(context.Context, ratelua.Call, []int64) error { return syscall.ECONNREFUSED }

// TestFieldsWithoutAnAnswer: the fields sent when no server answers (a
// fail-closed 503 and a fail-open pass) parse too, and HeadersNone sends
// none.
func TestFieldsWithoutAnAnswer(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		l, err := ratelua.NewTokenBucket(unreachable{}, ratelua.Options{FailOpen: failOpen}, ratelua.PerSecond(5, 5))
		if err != nil {
			t.Fatal(err)
		}
		for _, headers := range []ratehttp.Headers{ratehttp.HeadersIETF, ratehttp.HeadersIETFAndLegacy, ratehttp.HeadersNone} {
			mw, err := ratehttp.New(ratehttp.Options{Headers: headers}, ratehttp.Limit{Limiter: l, Name: "api"})
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
			want := map[bool]int{false: 503, true: 200}[failOpen]
			if w.Code != want {
				t.Errorf("fail open %v: %d, want %d", failOpen, w.Code, want)
			}
			fields(t, fmt.Sprintf("fail open %v, headers %d", failOpen, headers), w.Code, w.Header(), w.Body.Bytes())
			if got := w.Header().Get("RateLimit-Policy"); (got == "") != (headers == ratehttp.HeadersNone) {
				t.Errorf("headers %d: RateLimit-Policy %q", headers, got)
			}
		}
	}
}
