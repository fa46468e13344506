package middleware

import (
	"slices"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/ratehttp"
)

// TestSpoofedForwardedForOverHTTP: over a real connection from 127.0.0.1,
// a per-address limit of 1 per minute keeps one key whatever
// X-Forwarded-For says while 127.0.0.1 is not trusted, and honours the
// field once it is.
func TestSpoofedForwardedForOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, client ratelua.Client) {
		clock := newClock()
		for _, trust := range []bool{false, true} {
			l, err := ratelua.NewZSetLog(client, ratelua.Options{Prefix: t.Name() + map[bool]string{false: "-untrusted", true: "-trusted"}[trust], Clock: clock.now},
				ratelua.Log{Max: 1, Window: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			opts := ratehttp.Options{}
			if trust {
				opts.TrustedProxies = []string{"127.0.0.1"}
			}
			mw, err := ratehttp.New(opts, ratehttp.Limit{Limiter: l, Name: "ip"})
			if err != nil {
				t.Fatal(err)
			}
			srv := serve(t, mw.Handler(ok))
			statuses := []int{}
			for _, xff := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.2", "198.51.100.2, 127.0.0.1"} {
				statuses = append(statuses, send(t, "GET", srv.URL, "X-Forwarded-For: "+xff).status)
			}
			want := []int{200, 429, 429, 429}
			if trust {
				want = []int{200, 200, 429, 429}
			}
			if !slices.Equal(statuses, want) {
				t.Errorf("trusted %v: statuses %v, want %v", trust, statuses, want)
			}
		}
	})
}
