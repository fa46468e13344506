// Quickstart: a token bucket with no server to install (go run ./examples/quickstart).
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/embedded"
)

func main() {
	client := embedded.New(embedded.Options{}) // on Redis or Valkey: ratelua.Rueidis(rueidisClient)
	api, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "api"},
		ratelua.Bucket{Capacity: 2, RefillAmount: 1, RefillInterval: time.Minute}) // bursts of 2, then 1 a minute
	if err != nil {
		log.Fatal(err) // names the limit the scripts would refuse
	}
	for call := 1; call <= 3; call++ {
		r, err := api.Allow(context.Background(), "customer-42")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("call %d: allowed %v, %d left, retry after %v\n", call, r.Allowed, r.Remaining, r.RetryAfter.Round(time.Second))
	}
}
