package embedded_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/embedded"
)

// Logins limited to 1 per 5 seconds and 5 per hour, with no server; the
// engine's clock is moved by hand so that the output is reproducible.
func ExampleNew() {
	now := time.Unix(1_700_000_000, 0)
	client := embedded.New(embedded.Options{Clock: func() time.Time { return now }})
	logins, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "login"},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, wait := range []time.Duration{0, 2 * time.Second, 3 * time.Second} {
		now = now.Add(wait)
		r, err := logins.Allow(ctx, "203.0.113.7")
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Allowed, r.Remaining, r.RetryAfter, r.Limit)
	}
	// Output:
	// true 0 0s 0
	// false 0 3s 0
	// true 0 0s 0
}
