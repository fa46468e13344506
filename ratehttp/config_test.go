package ratehttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/ratehttp"
)

// TestBadConfiguration: New refuses what it cannot serve, with an error
// wrapping ErrInvalidConfig that names the mistake.
func TestBadConfiguration(t *testing.T) {
	two, err := ratelua.NewSlidingWindow(noClient{}, ratelua.Options{},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	same, err := ratelua.NewTokenBucket(noClient{}, ratelua.Options{}, ratelua.PerSecond(1, 5), ratelua.PerSecond(1, 5))
	if err != nil {
		t.Fatal(err)
	}
	one := oneLimit(t)
	for _, tt := range []struct {
		name   string
		opts   ratehttp.Options
		limits []ratehttp.Limit
		want   string
	}{
		{"no limit", ratehttp.Options{}, nil, "no limit"},
		{"no limiter", ratehttp.Options{}, []ratehttp.Limit{one, {Name: "x"}}, "limit 1 has no Limiter"},
		{"no name", ratehttp.Options{}, []ratehttp.Limit{{Limiter: one.Limiter}}, "limit 0 has no Name"},
		{"a CIDR that does not parse", ratehttp.Options{TrustedProxies: []string{"10.0.0.0/8", "10.0.0.0/33"}}, []ratehttp.Limit{one}, `TrustedProxies[1] "10.0.0.0/33"`},
		{"a proxy that is a hostname", ratehttp.Options{TrustedProxies: []string{"proxy.internal"}}, []ratehttp.Limit{one}, `TrustedProxies[0] "proxy.internal"`},
		{"an unknown proxy header", ratehttp.Options{ProxyHeader: "X-Client-IP"}, []ratehttp.Limit{one}, `ProxyHeader "X-Client-IP"`},
		{"an IPv4 prefix too long", ratehttp.Options{IPv4Prefix: 33}, []ratehttp.Limit{one}, "IPv4Prefix must be 1 to 32"},
		{"a negative IPv6 prefix", ratehttp.Options{IPv6Prefix: -1}, []ratehttp.Limit{one}, "IPv6Prefix must be 1 to 128"},
		{"unknown headers", ratehttp.Options{Headers: 7}, []ratehttp.Limit{one}, "Headers 7"},
		{"a control byte in a name", ratehttp.Options{}, []ratehttp.Limit{{Limiter: one.Limiter, Name: "per\nip"}}, `policy name "per\nip" has byte 0x0a at 3`},
		{"a name out of ASCII", ratehttp.Options{}, []ratehttp.Limit{{Limiter: one.Limiter, Name: "débit"}}, `policy name "débit" has byte 0xc3 at 1`},
		{"an empty name among Names", ratehttp.Options{}, []ratehttp.Limit{{Limiter: two, Names: []string{"fast", ""}}}, `policy name "" is empty`},
		{"too few Names", ratehttp.Options{}, []ratehttp.Limit{{Limiter: two, Names: []string{"fast"}}}, "limit 0 has 1 Names for a limiter of 2 limits"},
		{"a name twice on a route", ratehttp.Options{}, []ratehttp.Limit{{Limiter: one.Limiter, Name: "api"}, {Limiter: two, Names: []string{"api", "slow"}}}, `limits 0 and 1 both name a policy "api"`},
		{"two limits of one window", ratehttp.Options{}, []ratehttp.Limit{{Limiter: same, Name: "api"}}, `limit 0 names two policies "api-5s": set Names`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ratehttp.New(tt.opts, tt.limits...)
			if m != nil || !errors.Is(err, ratehttp.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, %v; want an ErrInvalidConfig saying %s", m, err, tt.want)
			}
		})
	}
}

// TestPolicyNames: a limiter's limits are named Name-<window> unless Names
// names them; names with quotes and backslashes are escaped in the
// sf-strings.
func TestPolicyNames(t *testing.T) {
	two, _ := ratelua.NewSlidingWindow(noClient{}, ratelua.Options{},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: 90 * time.Minute, Resolution: 10 * time.Minute})
	half, _ := ratelua.NewZSetLog(noClient{}, ratelua.Options{}, ratelua.Log{Max: 3, Window: 1500 * time.Millisecond}, ratelua.Log{Max: 9, Window: 24 * time.Hour})
	for _, tt := range []struct {
		limit ratehttp.Limit
		want  string
	}{
		{ratehttp.Limit{Limiter: two, Name: "login"}, `"login-5s";q=1;w=5, "login-1h30m";q=5;w=5400`},
		{ratehttp.Limit{Limiter: half, Name: "x"}, `"x-1.5s";q=3;w=2, "x-24h";q=9;w=86400`},
		{ratehttp.Limit{Limiter: two, Names: []string{`say "hi"`, `back\slash`}}, `"say \"hi\"";q=1;w=5, "back\\slash";q=5;w=5400`},
	} {
		m, err := ratehttp.New(ratehttp.Options{}, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		m.Handler(ok).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if got := w.Header().Get("RateLimit-Policy"); got != tt.want {
			t.Errorf("RateLimit-Policy %s, want %s", got, tt.want)
		}
	}
}

// ok is a handler that answers "ok".
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
