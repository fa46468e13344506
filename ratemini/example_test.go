package ratemini_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/ratelua/ratelua"
	ratemini "github.com/ratelua/ratelua/ratemini"
)

// A unit test's view of a login limiter (1 per 5 seconds and 5 per hour)
// on miniredis, with the time in the test's hands. In a test,
// miniredis.RunT(t) starts and stops the server.
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	clock := ratemini.NewClock(m, time.Unix(1_700_000_000, 0))
	client, err := ratemini.New(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	// No Options.Clock: the scripts read miniredis's TIME, which the clock
	// sets.
	logins, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "login"},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	attempt := func() {
		r, err := logins.Allow(ctx, "203.0.113.7")
		fmt.Println(r.Allowed, r.RetryAfter, err)
	}
	attempt()
	attempt()
	clock.Advance(5 * time.Second)
	attempt()
	clock.Advance(time.Hour) // the state's TTL runs out: the key is gone
	fmt.Println(len(m.Keys()))
	// Output:
	// true 0s <nil>
	// false 5s <nil>
	// true 0s <nil>
	// 0
}
