package integration

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/goredis"
	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/internal/keyslot"
	"github.com/ratelua/ratelua/testbench"
	"github.com/ratelua/ratelua/valkeygo"
)

// deployment is the servers a case runs on: a single node or a cluster.
type deployment struct {
	kind     testbench.Kind
	topology string // "single" or "cluster"
	node     *testbench.Node
	cluster  *testbench.Cluster
}

func single(n *testbench.Node) deployment {
	return deployment{kind: n.Kind, topology: "single", node: n}
}

func onCluster(c *testbench.Cluster) deployment {
	return deployment{kind: c.Kind, topology: "cluster", cluster: c}
}

// server is the deployment as the case report names it.
func (d deployment) server() harness.Server {
	if d.cluster != nil {
		return harness.OnCluster(d.cluster)
	}
	return harness.Single(d.node)
}

// addrs are the addresses a client starts from.
func (d deployment) addrs() []string {
	if d.cluster != nil {
		return d.cluster.Addrs()
	}
	return []string{d.node.Addr}
}

// masters are the nodes that serve keys now.
func (d deployment) masters() []*testbench.Node {
	if d.cluster != nil {
		return d.cluster.Masters()
	}
	return []*testbench.Node{d.node}
}

// nodes are every running node.
func (d deployment) nodes() []*testbench.Node {
	if d.cluster == nil {
		return []*testbench.Node{d.node}
	}
	var out []*testbench.Node
	for _, n := range d.cluster.Nodes {
		if n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// owner is the master that serves key.
func (d deployment) owner(t *testing.T, key string) *testbench.Node {
	t.Helper()
	if d.cluster == nil {
		return d.node
	}
	n, err := d.cluster.MasterOf(context.Background(), int(keyslot.Slot(key)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// each sends one command to each of nodes and fails the test on an error.
func each(t *testing.T, nodes []*testbench.Node, args ...string) {
	t.Helper()
	for _, n := range nodes {
		if _, err := n.Do(context.Background(), args...); err != nil {
			t.Fatalf("%s on %s: %v", args[0], n, err)
		}
	}
}

// connection says how a case connects: as which user, and whether the
// client may retry a failed call (the stopped-server case says no).
type connection struct {
	user, password string
	noRetry        bool
}

// adapter is one client library and how a case connects with it.
type adapter struct {
	name    string
	connect func(t *testing.T, d deployment, c connection) ratelua.Client
}

// adapters are the clients every case runs through.
var adapters = []adapter{
	{"rueidis", func(t *testing.T, d deployment, c connection) ratelua.Client {
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: d.addrs(), DisableCache: true,
			Username: c.user, Password: c.password, DisableRetry: c.noRetry})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(client.Close)
		return ratelua.Rueidis(client)
	}},
	{"go-redis", func(t *testing.T, d deployment, c connection) ratelua.Client {
		retries := 0
		if c.noRetry {
			retries = -1
		}
		var client redis.UniversalClient
		if d.cluster != nil {
			client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: d.addrs(),
				Username: c.user, Password: c.password, MaxRetries: retries})
		} else {
			client = redis.NewClient(&redis.Options{Addr: d.node.Addr,
				Username: c.user, Password: c.password, MaxRetries: retries})
		}
		t.Cleanup(func() { client.Close() })
		return goredis.New(client)
	}},
	{"valkey-go", func(t *testing.T, d deployment, c connection) ratelua.Client {
		client, err := valkey.NewClient(valkey.ClientOption{InitAddress: d.addrs(),
			Username: c.user, Password: c.password, DisableRetry: c.noRetry})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(client.Close)
		return valkeygo.New(client)
	}},
}
