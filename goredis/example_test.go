package goredis_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/goredis"
)

// Limit logins per source address to 1 per 5 seconds and 5 per hour, on a
// go-redis client. A *redis.ClusterClient or a *redis.Ring works the same.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	logins, err := ratelua.NewSlidingWindow(goredis.New(rdb),
		ratelua.Options{Prefix: "ex-login", Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }},
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for range 2 {
		r, err := logins.Allow(ctx, "203.0.113.7")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.Allowed, r.Remaining, r.RetryAfter)
	}
	// Output:
	// true 0 0s
	// false 0 5s
}
