package main

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/testbench"
)

// throughput is one ratelua script's end-to-end decisions per second.
type throughput struct {
	name    string
	single  float64   // single node: the best round of the main table (0: not run)
	cluster []float64 // six-node cluster, one per round
}

// oneLimit reports whether c is one of the 1-limit ratelua contenders that
// the throughput table runs on the cluster.
func oneLimit(c contender) bool {
	return c.group == groupRatelua && c.version == 0 && !c.functions && c.keys == nil &&
		(strings.Contains(c.name, "1 limit") || strings.Contains(c.name, "max 100"))
}

// runCluster starts a six-node cluster (3 masters, 1 replica each) of kind,
// pins every node to CPU 0 when cfg.pin, and drives each 1-limit ratelua
// script through a rueidis cluster client with the main table's callers
// and 10,000 event keys; the best of the rounds is quoted.
func runCluster(ctx context.Context, cfg config, kind testbench.Kind, cs []contender) ([]throughput, string, error) {
	cl, err := testbench.StartCluster(ctx, testbench.Options{Kind: kind, Masters: 3, Replicas: 1})
	if err != nil {
		return nil, "", fmt.Errorf("start cluster: %w", err)
	}
	defer cl.Close()
	if cfg.pin {
		for _, n := range cl.Nodes {
			if err := pinNode(ctx, n); err != nil {
				return nil, "", err
			}
		}
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs(), DisableCache: true})
	if err != nil {
		return nil, "", fmt.Errorf("cluster client: %w", err)
	}
	defer rc.Close()
	log.Printf("%s cluster of %d nodes at %v", kind, len(cl.Nodes), cl.Addrs())
	e := &env{rc: rc}
	out := make([]throughput, len(cs))
	runners := make([]runner, len(cs))
	for i, c := range cs {
		out[i].name = c.name
		if runners[i], err = c.make(e); err != nil {
			return nil, "", fmt.Errorf("%s: %w", c.name, err)
		}
	}
	for r := range cfg.rounds {
		for i, c := range cs {
			if _, err := drive(ctx, runners[i], eventKeys, cfg.callers, cfg.warm); err != nil {
				return nil, "", fmt.Errorf("%s: %w", c.name, err)
			}
			m, err := measureThroughput(ctx, cfg, runners[i])
			if err != nil {
				return nil, "", fmt.Errorf("%s: %w", c.name, err)
			}
			out[i].cluster = append(out[i].cluster, m)
			log.Printf("%s cluster round %d: %-58s %7.0f/s", kind, r+1, c.name, m)
		}
	}
	return out, cl.Nodes[0].Version, nil
}

// measureThroughput drives the load for cfg.dur and returns decisions/s.
func measureThroughput(ctx context.Context, cfg config, r runner) (float64, error) {
	start := time.Now()
	n, err := drive(ctx, r, eventKeys, cfg.callers, cfg.dur)
	if err != nil {
		return 0, err
	}
	return float64(n) / time.Now().Sub(start).Seconds(), nil
}

// pinNode pins a testbench node's server process to CPU 0.
func pinNode(ctx context.Context, n *testbench.Node) error {
	v, err := n.Do(ctx, "INFO", "server")
	if err != nil {
		return fmt.Errorf("info %s: %w", n.Addr, err)
	}
	s, _ := v.(string)
	for _, line := range strings.Split(s, "\n") {
		if pid, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			p, err := strconv.Atoi(pid)
			if err != nil {
				return fmt.Errorf("process_id of %s: %w", n.Addr, err)
			}
			return pin(p, 0)
		}
	}
	return fmt.Errorf("no process_id in INFO of %s", n.Addr)
}
