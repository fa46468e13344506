// Command http is an example service behind ratehttp: a login endpoint
// limited to 1 attempt per 5 s and 5 per hour per client address, an API
// limited per address and per API key with weighted requests, and a health
// check that is never limited.
//
//	go run ./examples/http                         # the embedded engine, nothing to install
//	go run ./examples/http --addr 127.0.0.1:6379   # a Redis or Valkey server or cluster
//
// then, in another terminal:
//
//	curl -i -X POST localhost:8080/login
//	curl -i -H 'X-Api-Key: demo' localhost:8080/api/items
//	curl -i -X POST -H 'X-Api-Key: demo' localhost:8080/api/export
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/ratehttp"
)

func main() {
	addr := flag.String("addr", "", "Redis or Valkey `host:port` (a comma-separated list for a cluster); empty runs the scripts on the embedded engine")
	listen := flag.String("listen", "127.0.0.1:8080", "the `address` to serve HTTP on")
	trust := flag.String("trust", "", "comma-separated trusted proxy `networks` whose X-Forwarded-For is read")
	legacy := flag.Bool("legacy", false, "also send X-RateLimit-Limit, -Remaining and -Reset")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, *listen, *trust, *legacy); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr, listen, trust string, legacy bool) error {
	client, where, closeClient, err := connect(addr)
	if err != nil {
		return err
	}
	defer closeClient()
	handler, err := newService(client, trust, legacy)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: listen, Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	log.Printf("limiters on %s; serving http://%s (Ctrl-C stops)", where, listen)
	log.Printf("try: curl -i -X POST http://%s/login", listen)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// connect returns the limiters' client: a server or cluster at addr, or
// the embedded engine.
func connect(addr string) (ratelua.Client, string, func(), error) {
	if strings.TrimSpace(addr) == "" {
		return newEngineClient(), "the embedded luatest engine", func() {}, nil
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: strings.Split(addr, ","), DisableCache: true})
	if err != nil {
		return nil, "", nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return ratelua.Rueidis(c), addr, c.Close, nil
}

// newService builds the routes and their limits.
func newService(client ratelua.Client, trust string, legacy bool) (http.Handler, error) {
	// Logins: 1 per 5 s and 5 per hour per client address, counting denied
	// attempts too, so that a client that keeps trying stays blocked.
	logins, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "example-login", CountDenied: true},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	if err != nil {
		return nil, err
	}
	// The API: 10 requests per second per address with bursts of 20, and
	// 100 per minute per API key; an export costs 10.
	perAddress, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "example-api"}, ratelua.PerSecond(10, 20))
	if err != nil {
		return nil, err
	}
	perKey, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "example-key"}, ratelua.PerWindow(100, time.Minute))
	if err != nil {
		return nil, err
	}
	opts := ratehttp.Options{
		OnError: func(r *http.Request, err error) { log.Printf("%s %s: limiter: %v", r.Method, r.URL.Path, err) },
	}
	if trust != "" {
		opts.TrustedProxies = strings.Split(trust, ",")
	}
	if legacy {
		opts.Headers = ratehttp.HeadersIETFAndLegacy
	}
	login, err := ratehttp.New(opts, ratehttp.Limit{Limiter: logins, Name: "login"})
	if err != nil {
		return nil, err
	}
	cost := func(r *http.Request) int64 {
		if r.URL.Path == "/api/export" {
			return 10
		}
		return 1
	}
	api, err := ratehttp.New(opts,
		ratehttp.Limit{Limiter: perAddress, Name: "per-address", Cost: cost},
		ratehttp.Limit{Limiter: perKey, Name: "per-key", Key: ratehttp.ByHeader("X-Api-Key"), Cost: cost})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /login", login.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "welcome\n")
	})))
	mux.Handle("GET /api/items", api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `["apple","pear"]`+"\n")
	})))
	mux.Handle("POST /api/export", api.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "export started\n")
	})))
	// Not wrapped: never limited, no rate-limit fields.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	return mux, nil
}
