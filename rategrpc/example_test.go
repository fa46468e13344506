package rategrpc_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/embedded"
	"github.com/ratelua/ratelua/rategrpc"
)

// Calls limited per peer address to bursts of 2, then 1 a minute: the
// third is answered ResourceExhausted (with a RetryInfo detail) and never
// reaches the handler.
func ExampleNew() {
	// No server: the embedded engine, its clock fixed for this output. A
	// service passes ratelua.Rueidis(rueidisClient) or an adapter's Client.
	client := embedded.New(embedded.Options{Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }})
	perPeer, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "grpc"},
		ratelua.Bucket{Capacity: 2, RefillAmount: 1, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	lim, err := rategrpc.New(rategrpc.Options{}, rategrpc.Limit{Limiter: perPeer, Name: "peer", Key: rategrpc.ByMethod()})
	if err != nil {
		panic(err) // names the bad limit or option
	}
	// A server takes lim.Unary() and lim.Stream():
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(lim.Unary()), grpc.ChainStreamInterceptor(lim.Stream()))
	defer srv.Stop()

	// Here the unary interceptor is called as the server would call it.
	info := &grpc.UnaryServerInfo{FullMethod: "/shop.Orders/Create"}
	handler := func(ctx context.Context, req any) (any, error) { return "created", nil }
	for range 3 {
		resp, err := lim.Unary()(context.Background(), nil, info, handler)
		fmt.Println(resp, status.Code(err))
	}
	// Output:
	// created OK
	// created OK
	// <nil> ResourceExhausted
}
