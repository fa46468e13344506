// Command llm is an example service a team can start from: an HTTP API in
// front of a language model, limiting the tokens each API key spends per
// minute and per day, when the tokens a request spends are known only once
// the model has answered. Each request reserves its prompt and its
// max_tokens before the model runs (ratehttp Limit.Reserve) and settles
// with the usage the model reports (ratehttp.Settle): what it did not use
// goes back, an overrun is charged. Answers carry the IETF RateLimit
// fields; a key out of tokens is answered 429 with Retry-After. The model
// here is a fake that answers with random usage.
//
//	go run ./examples/llm                         # the embedded engine, nothing to install
//	go run ./examples/llm --addr 127.0.0.1:6379   # a Redis or Valkey server or cluster
//
// then, in another terminal:
//
//	curl -i -H 'Authorization: Bearer demo' -d '{"prompt":"hello","max_tokens":200}' localhost:8080/v1/completions
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/ratehttp"
)

// The limits of each API key.
const (
	tokensPerMinute = 2000
	tokensPerDay    = 20000
	maxTokensLimit  = 1000 // the most max_tokens a request may ask for
)

func main() {
	addr := flag.String("addr", "", "Redis or Valkey `host:port` (a comma-separated list for a cluster); empty runs the scripts on the embedded engine")
	listen := flag.String("listen", "127.0.0.1:8080", "the `address` to serve HTTP on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, *listen); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr, listen string) error {
	client, where, closeClient, err := connect(addr)
	if err != nil {
		return err
	}
	defer closeClient()
	handler, err := newService(client, nil, newFakeModel(uint64(time.Now().UnixNano())))
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
	log.Printf(`try: curl -i -H 'Authorization: Bearer demo' -d '{"prompt":"hello","max_tokens":200}' http://%s/v1/completions`, listen)
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

// completion is a request to the model.
type completion struct {
	Prompt    string `json:"prompt"`
	MaxTokens int64  `json:"max_tokens"`
}

// usage is what the model reports it spent.
type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// promptTokens is the tokens of a prompt, as the fake model counts them:
// one per 4 bytes, rounded up.
func promptTokens(prompt string) int64 { return int64(len(prompt)+3) / 4 }

type completionKey struct{}

// newService builds the API: POST /v1/completions behind a token bucket
// per API key of tokensPerMinute a minute and tokensPerDay a day (two
// limits of one limiter, decided and settled together). clock is the
// limiters' clock (nil: the server's).
func newService(client ratelua.Client, clock func() time.Time, model *fakeModel) (http.Handler, error) {
	tokens, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "example-llm", Clock: clock},
		ratelua.Bucket{Capacity: tokensPerMinute, RefillAmount: tokensPerMinute, RefillInterval: time.Minute},
		ratelua.Bucket{Capacity: tokensPerDay, RefillAmount: tokensPerDay, RefillInterval: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	mw, err := ratehttp.New(ratehttp.Options{
		OnError: func(r *http.Request, err error) { log.Printf("%s %s: limiter: %v", r.Method, r.URL.Path, err) },
	}, ratehttp.Limit{
		Limiter: tokens,
		Names:   []string{"tokens-per-minute", "tokens-per-day"},
		Key:     apiKey,
		// The prompt and the most the completion may take: an estimate
		// that never falls short unless the model overruns max_tokens.
		Reserve: func(r *http.Request) int64 {
			c := r.Context().Value(completionKey{}).(completion)
			return promptTokens(c.Prompt) + c.MaxTokens
		},
	})
	if err != nil {
		return nil, err
	}
	limited := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(completionKey{}).(completion)
		text, used := model.complete(c)
		// Settled when this handler returns: what was not used goes back.
		ratehttp.Settle(r.Context(), used.TotalTokens)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"text": text, "usage": used})
	}))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := apiKey(r); !ok {
			http.Error(w, "an API key is required: Authorization: Bearer <key>", http.StatusUnauthorized)
			return
		}
		var c completion
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&c); err != nil {
			http.Error(w, "the body must be JSON: {\"prompt\": \"...\", \"max_tokens\": 1..1000}", http.StatusBadRequest)
			return
		}
		if c.MaxTokens < 1 || c.MaxTokens > maxTokensLimit {
			http.Error(w, fmt.Sprintf("max_tokens must be 1 to %d, got %d", maxTokensLimit, c.MaxTokens), http.StatusBadRequest)
			return
		}
		limited.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), completionKey{}, c)))
	})
	return mux, nil
}

// apiKey is the bearer token of the Authorization field.
func apiKey(r *http.Request) (string, bool) {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	key = strings.TrimSpace(key)
	return key, ok && key != ""
}

// fakeModel answers every prompt with a random number of tokens, at most
// the request's max_tokens, as a model that stops early does.
type fakeModel struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newFakeModel(seed uint64) *fakeModel {
	return &fakeModel{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// complete answers c and reports its usage.
func (m *fakeModel) complete(c completion) (string, usage) {
	m.mu.Lock()
	n := 1 + m.rng.Int64N(c.MaxTokens)
	m.mu.Unlock()
	u := usage{PromptTokens: promptTokens(c.Prompt), CompletionTokens: n}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return strings.Repeat("lorem ", int(min(n, 50))), u
}
