package core

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

// addr returns the address of your Redis or Valkey server ("127.0.0.1:6379");
// here, a redis-server the package's tests start.
func addr() string { return sharedServerAddr() }

// fixedClock makes the examples' output reproducible; leave Options.Clock
// nil to use the server's clock.
func fixedClock() time.Time { return time.Unix(1_700_000_000, 0) }

// Limit logins per source address to 1 per 5 seconds and 5 per hour.
func ExampleNewSlidingWindow() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	logins, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{Prefix: "ex-login", Clock: fixedClock},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 2 {
		r, err := logins.Allow(ctx, "203.0.113.7")
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Allowed, r.Remaining, r.RetryAfter)
	}
	// Output:
	// true 0 0s
	// false 0 5s
}

// An API quota of 10 requests per second with bursts of 20, and a cost per
// request.
func ExampleNewTokenBucket() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	api, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "ex-api", Clock: fixedClock}, ratelua.PerSecond(10, 20))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	r, _ := api.AllowN(ctx, "customer-1", 15) // an expensive call costs 15
	fmt.Println(r.Allowed, r.Remaining)
	r, _ = api.AllowN(ctx, "customer-1", 10)
	fmt.Println(r.Allowed, r.Remaining, r.RetryAfter)
	// Output:
	// true 5
	// false 5 500ms
}

// An exact sliding log: never more than 3 password resets in any 24 hours.
func ExampleNewZSetLog() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	resets, err := ratelua.NewZSetLog(ratelua.Rueidis(client), ratelua.Options{Prefix: "ex-reset", Clock: fixedClock},
		ratelua.Log{Max: 3, Window: 24 * time.Hour})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 4 {
		r, _ := resets.Allow(ctx, "alice@example.com")
		fmt.Println(r.Allowed, r.Remaining)
	}
	_ = resets.Reset(ctx, "alice@example.com") // support unblocked her
	r, _ := resets.Peek(ctx, "alice@example.com")
	fmt.Println(r.Allowed, r.Remaining)
	// Output:
	// true 2
	// true 1
	// true 0
	// false 0
	// true 3
}

// A decaying count: about 100 events, a tenth forgotten every second; the
// least memory per key.
func ExampleNewAR1() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	crawler, err := ratelua.NewAR1(ratelua.Rueidis(client), ratelua.Options{Prefix: "ex-crawl", Clock: fixedClock, CountDenied: true},
		ratelua.Decay{Max: 100, Factor: 1.1, Resolution: time.Second})
	if err != nil {
		panic(err)
	}
	r, _ := crawler.AllowN(context.Background(), "bot-7", 100)
	fmt.Println(r.Allowed, r.Remaining, r.RetryAfter)
	// Output:
	// true 0 0s
}

// Decide many event keys in one round trip.
func ExampleLimiter_AllowBatch() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	l, _ := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "ex-batch", Clock: fixedClock}, ratelua.PerSecond(1, 2))
	for _, o := range l.AllowBatch(context.Background(), []ratelua.Request{{Key: "a", N: 1}, {Key: "b", N: 2}, {Key: "c", N: 3}}) {
		fmt.Println(o.Result.Allowed, o.Result.Remaining, o.Err)
	}
	// Output:
	// true 1 <nil>
	// true 0 <nil>
	// false 2 <nil>
}
