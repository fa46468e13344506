package testbench_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/testbench"
)

// A cluster outside a test (in a test, testbench.Start does the skipping
// and the cleanup): crash a master, wait for its replica to take over,
// bring the old master back as a replica. It needs valkey-server on PATH
// (an example cannot skip).
func ExampleStartCluster() {
	ctx := context.Background()
	c, err := testbench.StartCluster(ctx, testbench.Options{Kind: testbench.Valkey})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	m, err := c.MasterOf(ctx, 0)
	if err != nil {
		log.Fatal(err)
	}
	m.Kill()
	if err := c.WaitHealthy(ctx); err != nil { // a replica has taken over
		log.Fatal(err)
	}
	if err := m.Restart(ctx); err != nil { // back, as a replica
		log.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(c.Masters()), "masters,", len(c.Replicas()), "replicas")
	// Output: 3 masters, 3 replicas
}
