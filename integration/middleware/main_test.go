package middleware

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// backends are the servers this package's tests run the middleware
// against, started by TestMain for these tests only: a redis-server and a
// valkey-server, and a six-node cluster of each, started on first use.
var backends struct {
	single   map[testbench.Kind]*testbench.Node
	errs     map[testbench.Kind]error
	mu       sync.Mutex
	clusters map[testbench.Kind]*testbench.Cluster
	cases    map[string]int // runs per backend, reported at the end
}

func TestMain(m *testing.M) {
	backends.single = map[testbench.Kind]*testbench.Node{}
	backends.errs = map[testbench.Kind]error{}
	backends.clusters = map[testbench.Kind]*testbench.Cluster{}
	backends.cases = map[string]int{}
	for _, kind := range kinds {
		n, err := testbench.StartNode(context.Background(), testbench.Options{Kind: kind})
		if err != nil {
			backends.errs[kind] = err
			continue
		}
		backends.single[kind] = n
	}
	code := m.Run()
	for _, n := range backends.single {
		n.Close()
	}
	for _, c := range backends.clusters {
		c.Close()
	}
	if len(backends.cases) > 0 {
		fmt.Fprintf(os.Stderr, "ratehttp server cases: %v\n", backends.cases)
	}
	os.Exit(code)
}

var kinds = []testbench.Kind{testbench.Redis, testbench.Valkey}

// unavailable skips t for a missing server, or fails it under CI=true.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("required under CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// eachBackend runs f on a client of every server: redis and valkey, a
// single node and a six-node cluster.
func eachBackend(t *testing.T, f func(t *testing.T, client ratelua.Client)) {
	for _, kind := range kinds {
		for _, topology := range []string{"single", "cluster"} {
			t.Run(string(kind)+"-"+topology, func(t *testing.T) {
				var addrs []string
				if topology == "single" {
					n := backends.single[kind]
					if n == nil {
						unavailable(t, "no %s server: %v", kind, backends.errs[kind])
					}
					addrs = []string{n.Addr}
				} else {
					addrs = cluster(t, kind).Addrs()
				}
				client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, DisableCache: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(client.Close)
				backends.mu.Lock()
				backends.cases[string(kind)+" "+topology]++
				backends.mu.Unlock()
				f(t, ratelua.Rueidis(client))
			})
		}
	}
}

// cluster starts the six-node cluster of kind once.
func cluster(t *testing.T, kind testbench.Kind) *testbench.Cluster {
	t.Helper()
	backends.mu.Lock()
	defer backends.mu.Unlock()
	if c := backends.clusters[kind]; c != nil {
		return c
	}
	c, err := testbench.StartCluster(context.Background(), testbench.Options{Kind: kind})
	if errors.Is(err, testbench.ErrUnavailable) {
		unavailable(t, "no %s cluster: %v", kind, err)
	}
	if err != nil {
		t.Fatalf("start %s cluster: %v", kind, err)
	}
	backends.clusters[kind] = c
	return c
}
