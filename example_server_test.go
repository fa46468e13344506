package ratelua_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

// A limiter on Redis or Valkey through a rueidis client (a single node, a
// sentinel or a cluster: InitAddress lists any of its nodes). It needs a
// server, so go test compiles it without running it.
func ExampleRueidis() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	api, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "api"}, ratelua.PerSecond(10, 20))
	if err != nil {
		log.Fatal(err)
	}
	r, err := api.Allow(context.Background(), "customer-42") // one EVALSHA on one key
	if err != nil {
		log.Fatal(err) // wraps ErrUnavailable when the server did not answer
	}
	fmt.Println(r.Allowed, r.Remaining)
}

// Forget every limiter's state under the prefix "login" on every master
// (SCAN and UNLINK, never KEYS), counting first. It needs a server, so go
// test compiles it without running it.
func ExampleResetPrefixWith() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := ratelua.ResetPrefixWith(ctx, ratelua.Rueidis(client), "login", ratelua.ResetOptions{DryRun: true}) // count only
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "keys would go")
	n, err = ratelua.ResetPrefixWith(ctx, ratelua.Rueidis(client), "login", ratelua.ResetOptions{Progress: func(keys int64) { log.Println(keys, "deleted so far") }})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "keys deleted")
}
