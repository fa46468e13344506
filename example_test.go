package ratelua_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/embedded"
)

// Limit logins per source address to 1 per 5 seconds and 5 per hour.
func ExampleNewSlidingWindow() {
	// No server: the embedded engine, its clock fixed for this output. A
	// service passes ratelua.Rueidis(rueidisClient) or an adapter's Client.
	client := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	logins, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "ex-login"},
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
	// No server: the embedded engine, its clock fixed for this output. A
	// service passes ratelua.Rueidis(rueidisClient) or an adapter's Client.
	client := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	api, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "ex-api"}, ratelua.PerSecond(10, 20))
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
	// No server: the embedded engine, its clock fixed for this output. A
	// service passes ratelua.Rueidis(rueidisClient) or an adapter's Client.
	client := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	resets, err := ratelua.NewZSetLog(client, ratelua.Options{Prefix: "ex-reset"},
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
	// No server: the embedded engine, its clock fixed for this output. A
	// service passes ratelua.Rueidis(rueidisClient) or an adapter's Client.
	client := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	crawler, err := ratelua.NewAR1(client, ratelua.Options{Prefix: "ex-crawl", CountDenied: true},
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
	// No server: the embedded engine, its clock fixed for this output. A
	// service passes ratelua.Rueidis(rueidisClient) or an adapter's Client.
	client := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	l, _ := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "ex-batch"}, ratelua.PerSecond(1, 2))
	for _, o := range l.AllowBatch(context.Background(), []ratelua.Request{{Key: "a", N: 1}, {Key: "b", N: 2}, {Key: "c", N: 3}}) {
		fmt.Println(o.Result.Allowed, o.Result.Remaining, o.Err)
	}
	// Output:
	// true 1 <nil>
	// true 0 <nil>
	// false 2 <nil>
}

// At most 2 concurrent logins per account, across every instance: a
// holder that crashes frees its slot after the 30 s lease.
func ExampleNewConcurrency() {
	// No server: the embedded engine, its clock fixed for this output. A
	// service passes ratelua.Rueidis(rueidisClient) or an adapter's Client.
	client := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	logins, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "ex-logins"},
		ratelua.Slots{Max: 2, Lease: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var leases []*ratelua.Lease
	for range 3 {
		lease, r, err := logins.Acquire(ctx, "account:42")
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Allowed, r.Remaining, r.RetryAfter)
		if lease != nil {
			leases = append(leases, lease)
		}
	}
	if err := leases[0].Release(ctx); err != nil {
		panic(err)
	}
	_, r, _ := logins.Acquire(ctx, "account:42")
	fmt.Println(r.Allowed, r.Remaining)
	// Output:
	// true 1 0s
	// true 0 0s
	// false 0 30s
	// true 0
}
