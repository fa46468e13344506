package ratehttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/embedded"
	"github.com/ratelua/ratelua/ratehttp"
)

// Login attempts limited per client address to 1 per 5 seconds and 5 per
// hour: the second attempt is answered 429 with Retry-After and the IETF
// RateLimit fields, and never reaches the handler.
func ExampleNew() {
	// No server: the embedded engine, its clock fixed for this output. A
	// service passes ratelua.Rueidis(rueidisClient) or an adapter's Client.
	client := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	logins, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "login"},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	if err != nil {
		panic(err)
	}
	mw, err := ratehttp.New(ratehttp.Options{TrustedProxies: []string{"10.0.0.0/8"}},
		ratehttp.Limit{Limiter: logins, Names: []string{"login-5s", "login-1h"}}) // keyed by the client address
	if err != nil {
		panic(err) // names the bad CIDR, policy name or missing limiter
	}
	mux := http.NewServeMux()
	mux.Handle("POST /login", mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "welcome")
	})))
	for range 2 {
		req := httptest.NewRequest("POST", "/login", nil)
		req.RemoteAddr = "203.0.113.7:40000"
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("RateLimit"))
	}
	// Output:
	// 200  "login-5s";r=0;t=5
	// 429 5 "login-5s";r=0;t=5
}
