package testbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Slots is the number of hash slots of a cluster.
const Slots = 16384

// Cluster is a Redis or Valkey cluster of masters and replicas.
type Cluster struct {
	// Kind is the server family.
	Kind Kind
	// Nodes are every node, masters first as started (node i < Masters
	// was master i, the replicas followed in order); roles change with
	// failovers, so ask Masters and Replicas for the current ones.
	Nodes []*Node

	opts Options
	root string

	mu     sync.Mutex
	closed bool
}

// StartCluster starts Options.Masters masters with Options.Replicas
// replicas each, every node in its own temporary directory, and bootstraps
// the cluster: CLUSTER SET-CONFIG-EPOCH and ADDSLOTSRANGE on the masters
// (the 16384 slots split evenly, in order), CLUSTER MEET, then, once every
// node knows every other, CLUSTER REPLICATE on the replicas. It returns
// when WaitHealthy passes. Close the cluster when done.
func StartCluster(ctx context.Context, opts Options) (*Cluster, error) {
	ctx, cancel := withDefaultTimeout(ctx, defaultStartTimeout)
	defer cancel()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	prov := opts.provider()
	if err := prov.Check(ctx, opts.Kind); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "ratelua-testbench-"+string(opts.Kind)+"-cluster-")
	if err != nil {
		return nil, fmt.Errorf("testbench: %w", err)
	}
	c := &Cluster{Kind: opts.Kind, opts: opts, root: root}
	total := opts.masters() * (1 + opts.replicas())
	c.Nodes = make([]*Node, total)
	errs := make([]error, total)
	var wg sync.WaitGroup
	for i := range total {
		wg.Go(func() {
			c.Nodes[i], errs[i] = launchNode(ctx, prov, opts.Kind, root, clusterConfig, opts.Config)
		})
	}
	wg.Wait()
	c.Nodes = slices.DeleteFunc(c.Nodes, func(n *Node) bool { return n == nil })
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.bootstrap(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("testbench: %s cluster: %w", opts.Kind, err)
	}
	return c, nil
}

func (c *Cluster) bootstrap(ctx context.Context) error {
	masters := c.opts.masters()
	for _, n := range c.Nodes {
		id, err := n.Do(ctx, "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		n.ID = asString(id)
	}
	// Distinct epochs up front spare the masters the collision dance.
	for i, n := range c.Nodes[:masters] {
		lo, hi := i*Slots/masters, (i+1)*Slots/masters-1
		if _, err := n.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
		if _, err := n.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return err
		}
	}
	first := c.Nodes[0]
	for _, n := range c.Nodes[1:] {
		host, port, _ := net.SplitHostPort(n.Addr)
		if _, err := first.Do(ctx, "CLUSTER", "MEET", host, port, strconv.Itoa(n.Port+busOffset)); err != nil {
			return err
		}
	}
	err := poll(ctx, "nodes meeting", 50*time.Millisecond, func(ctx context.Context) error {
		for _, n := range c.Nodes {
			entries, err := clusterNodes(ctx, n)
			if err != nil {
				return err
			}
			if len(entries) != len(c.Nodes) {
				return fmt.Errorf("%s knows %d of %d nodes", n, len(entries), len(c.Nodes))
			}
			for _, e := range entries {
				if e.flags["handshake"] || e.flags["noaddr"] || !e.flags["myself"] && e.link != "connected" {
					return fmt.Errorf("%s sees %.8s as %s, link %s", n, e.id, e.flagText, e.link)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for j, n := range c.Nodes[masters:] {
		m := c.Nodes[j%masters]
		if _, err := n.Do(ctx, "CLUSTER", "REPLICATE", m.ID); err != nil {
			return fmt.Errorf("%s: CLUSTER REPLICATE %s: %w", n, m.ID, err)
		}
	}
	return c.WaitHealthy(ctx)
}

// Addrs returns every node's address, for rueidis.ClientOption.InitAddress.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Masters returns the running nodes that say (ROLE) they are masters now,
// in Nodes order. Stopped, killed and paused nodes are left out.
func (c *Cluster) Masters() []*Node {
	m, _ := c.roles()
	return m
}

// Replicas returns the running nodes that say (ROLE) they are replicas now,
// in Nodes order. Stopped, killed and paused nodes are left out.
func (c *Cluster) Replicas() []*Node {
	_, r := c.roles()
	return r
}

func (c *Cluster) roles() (masters, replicas []*Node) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, n := range c.live() {
		switch role(ctx, n) {
		case "master":
			masters = append(masters, n)
		case "slave":
			replicas = append(replicas, n)
		}
	}
	return masters, replicas
}

// role is the first element of ROLE: "master", "slave" or "" when the
// node does not answer.
func role(ctx context.Context, n *Node) string {
	v, err := n.Do(ctx, "ROLE")
	if err != nil {
		return ""
	}
	if a := asArray(v); len(a) > 0 {
		return asString(a[0])
	}
	return ""
}

// live returns the nodes that run and are not paused.
func (c *Cluster) live() []*Node {
	var live []*Node
	for _, n := range c.Nodes {
		if n.Running() {
			live = append(live, n)
		}
	}
	return live
}

// nodeByID returns the node with id, or nil.
func (c *Cluster) nodeByID(id string) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// MasterOf returns the master that serves slot, as the first running node
// that answers CLUSTER SLOTS says.
func (c *Cluster) MasterOf(ctx context.Context, slot int) (*Node, error) {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	if slot < 0 || slot >= Slots {
		return nil, fmt.Errorf("testbench: slot %d out of range", slot)
	}
	var errs []error
	for _, n := range c.live() {
		ranges, err := clusterSlots(ctx, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range ranges {
			if r.start <= slot && slot <= r.end {
				if m := c.nodeByID(r.master.id); m != nil {
					return m, nil
				}
				return nil, fmt.Errorf("testbench: %s says slot %d is served by %s, not a node of this cluster", n, slot, r.master.id)
			}
		}
		errs = append(errs, fmt.Errorf("%s: slot %d is not served", n, slot))
	}
	if len(errs) == 0 {
		return nil, errors.New("testbench: MasterOf: no node is running")
	}
	return nil, fmt.Errorf("testbench: MasterOf(%d): %w", slot, errors.Join(errs...))
}

// WaitHealthy waits until the cluster is healthy from every running node's
// point of view (stopped, killed and paused nodes are left out):
// cluster_state:ok and all 16384 slots served by running masters; no
// running node flagged failing, in handshake or disconnected; every
// running node has the same view of which master serves which slots and
// which master each running replica follows; no slot is being migrated;
// every replica's master_link_status is up, and every running node lists
// every running replica in CLUSTER SLOTS (with its master's slots) and as
// "online" in CLUSTER SHARDS, where clients such as rueidis look for
// replicas. Without a deadline in ctx it gives up after 30 s; its error
// then says what was still wrong.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	return poll(ctx, "cluster not healthy", 50*time.Millisecond, c.checkHealthy)
}

// poll calls f until it returns nil or ctx ends; the error then quotes
// f's last complaint.
func poll(ctx context.Context, what string, every time.Duration, f func(context.Context) error) error {
	var last error
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testbench: %s: %w; last: %v", what, ctx.Err(), last)
		case <-time.After(every):
		}
	}
}

func (c *Cluster) checkHealthy(ctx context.Context) error {
	live := c.live()
	if len(live) == 0 {
		return errors.New("no node is running")
	}
	liveIDs := map[string]*Node{}
	for _, n := range live {
		liveIDs[n.ID] = n
	}
	var refView string
	var refEntries map[string]nodeEntry
	for _, n := range live {
		v, err := n.Do(ctx, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		info := infoFields(v)
		if s := info["cluster_state"]; s != "ok" {
			return fmt.Errorf("%s: cluster_state:%s", n, s)
		}
		if s := info["cluster_slots_ok"]; s != strconv.Itoa(Slots) {
			return fmt.Errorf("%s: cluster_slots_ok:%s", n, s)
		}
		entries, err := clusterNodes(ctx, n)
		if err != nil {
			return err
		}
		byID := map[string]nodeEntry{}
		for _, e := range entries {
			byID[e.id] = e
		}
		for _, m := range live {
			e, ok := byID[m.ID]
			switch {
			case !ok:
				return fmt.Errorf("%s does not know %s", n, m)
			case e.flags["fail"] || e.flags["fail?"] || e.flags["handshake"] || e.flags["noaddr"]:
				return fmt.Errorf("%s sees %s as %s", n, m, e.flagText)
			case !e.flags["myself"] && e.link != "connected":
				return fmt.Errorf("%s: link to %s is %s", n, m, e.link)
			case e.flags["myself"] && e.migrating:
				return fmt.Errorf("%s has a slot migration open", n)
			}
		}
		// This node's view: which master serves which slots, whom each
		// running replica follows.
		var view []string
		covered := 0
		for _, e := range entries {
			if len(e.slots) > 0 {
				if liveIDs[e.id] == nil {
					return fmt.Errorf("%s: slots %v are served by %.8s, which is not running", n, e.slots, e.id)
				}
				view = append(view, fmt.Sprintf("%s serves %v", e.id, e.slots))
				for _, r := range e.slots {
					covered += r[1] - r[0] + 1
				}
			}
			if e.flags["slave"] && liveIDs[e.id] != nil {
				if liveIDs[e.master] == nil {
					return fmt.Errorf("%s: replica %.8s follows %.8s, which is not running", n, e.id, e.master)
				}
				view = append(view, fmt.Sprintf("%s follows %s", e.id, e.master))
			}
		}
		if covered != Slots {
			return fmt.Errorf("%s: %d of %d slots served", n, covered, Slots)
		}
		sort.Strings(view)
		joined := strings.Join(view, "; ")
		if refView == "" {
			refView, refEntries = joined, byID
		} else if joined != refView {
			return fmt.Errorf("nodes disagree: %s sees %q, %s sees %q", live[0], refView, n, joined)
		}
	}
	// Replication links, and replicas visible to clients.
	type replicaOf struct{ replica, master *Node }
	var replicas []replicaOf
	for _, n := range live {
		e := refEntries[n.ID]
		if !e.flags["slave"] {
			continue
		}
		v, err := n.Do(ctx, "INFO", "replication")
		if err != nil {
			return err
		}
		info := infoFields(v)
		if info["role"] != "slave" {
			return fmt.Errorf("%s: role:%s, but the cluster sees a replica", n, info["role"])
		}
		if s := info["master_link_status"]; s != "up" {
			return fmt.Errorf("%s: master_link_status:%s", n, s)
		}
		m := liveIDs[e.master]
		if port := info["master_port"]; port != strconv.Itoa(m.Port) {
			return fmt.Errorf("%s replicates port %s, not its master %s", n, port, m)
		}
		if len(refEntries[m.ID].slots) > 0 {
			replicas = append(replicas, replicaOf{n, m})
		}
	}
	for _, n := range live {
		ranges, err := clusterSlots(ctx, n)
		if err != nil {
			return err
		}
		for _, ro := range replicas {
			for _, r := range ranges {
				if r.master.id == ro.master.ID && !slices.ContainsFunc(r.replicas, func(s slotNode) bool { return s.id == ro.replica.ID }) {
					return fmt.Errorf("%s: CLUSTER SLOTS %d-%d lists no replica %s", n, r.start, r.end, ro.replica)
				}
			}
		}
		health, err := shardsHealth(ctx, n)
		if err != nil {
			return err
		}
		for _, m := range live {
			if h := health[m.ID]; h != "online" {
				return fmt.Errorf("%s: CLUSTER SHARDS has %s as %q", n, m, h)
			}
		}
	}
	return nil
}

// Failover promotes a replica of master with CLUSTER FAILOVER sent to the
// replica (a manual failover: the master stops writes until the replica has
// caught up, so nothing is lost), waits until the replica is master and the
// old master its replica, and the cluster is healthy, and returns the new
// master. When master is not running, it uses CLUSTER FAILOVER FORCE and
// does not wait for the old master.
func (c *Cluster) Failover(ctx context.Context, master *Node) (*Node, error) {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	replica, err := c.replicaOf(ctx, master)
	if err != nil {
		return nil, err
	}
	args := []string{"CLUSTER", "FAILOVER"}
	masterUp := master.Running()
	if !masterUp {
		args = append(args, "FORCE")
	}
	sent := time.Now()
	if _, err := replica.Do(ctx, args...); err != nil {
		return nil, fmt.Errorf("testbench: %s: %w", replica, err)
	}
	err = poll(ctx, "failover", 50*time.Millisecond, func(ctx context.Context) error {
		if role(ctx, replica) != "master" {
			// A manual failover the master did not take up times out
			// after 5 s; ask again.
			if time.Since(sent) > 6*time.Second {
				sent = time.Now()
				replica.Do(ctx, args...)
			}
			return fmt.Errorf("%s is not master yet", replica)
		}
		if !masterUp {
			return nil
		}
		me, err := myself(ctx, master)
		if err != nil {
			return err
		}
		if !me.flags["slave"] || me.master != replica.ID {
			return fmt.Errorf("%s is %s of %.8s, not replica of %s", master, me.flagText, me.master, replica)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return replica, c.WaitHealthy(ctx)
}

// replicaOf returns a running replica of master whose link is up.
func (c *Cluster) replicaOf(ctx context.Context, master *Node) (*Node, error) {
	for _, n := range c.live() {
		if n == master {
			continue
		}
		me, err := myself(ctx, n)
		if err != nil || !me.flags["slave"] || me.master != master.ID {
			continue
		}
		v, err := n.Do(ctx, "INFO", "replication")
		if err == nil && infoFields(v)["master_link_status"] == "up" {
			return n, nil
		}
	}
	return nil, fmt.Errorf("testbench: %s has no running replica with its link up", master)
}

// myself returns n's own CLUSTER NODES entry.
func myself(ctx context.Context, n *Node) (nodeEntry, error) {
	entries, err := clusterNodes(ctx, n)
	if err != nil {
		return nodeEntry{}, err
	}
	for _, e := range entries {
		if e.flags["myself"] {
			return e, nil
		}
	}
	return nodeEntry{}, fmt.Errorf("%s: CLUSTER NODES has no myself", n)
}

// MigrateSlot moves slot, keys and all, to the master to, the way
// redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING on to and
// MIGRATING on the current master, MIGRATE of the keys in batches
// (CLUSTER GETKEYSINSLOT), then CLUSTER SETSLOT NODE on to, the old master
// and every other master; it returns when every running node serves the
// slot from to. Clients may go on using the slot meanwhile: they get ASK
// for keys already moved (and new keys), MOVED afterwards.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to *Node) error {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	from, err := c.MasterOf(ctx, slot)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if r := role(ctx, to); r != "master" {
		return fmt.Errorf("testbench: MigrateSlot to %s: it is not a master (ROLE %q)", to, r)
	}
	s := strconv.Itoa(slot)
	if _, err := to.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", from.ID); err != nil {
		return fmt.Errorf("testbench: %s: %w", to, err)
	}
	if _, err := from.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", to.ID); err != nil {
		return fmt.Errorf("testbench: %s: %w", from, err)
	}
	host, port, _ := net.SplitHostPort(to.Addr)
	for moved := 0; ; {
		v, err := from.Do(ctx, "CLUSTER", "GETKEYSINSLOT", s, "100")
		if err != nil {
			return fmt.Errorf("testbench: %s: %w", from, err)
		}
		keys := asArray(v)
		if len(keys) == 0 {
			break
		}
		args := []string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}
		for _, k := range keys {
			args = append(args, asString(k))
		}
		if _, err := from.Do(ctx, args...); err != nil {
			return fmt.Errorf("testbench: %s: MIGRATE %d keys of slot %d to %s (%d moved before): %w", from, len(keys), slot, to, moved, err)
		}
		moved += len(keys)
	}
	// The new owner first, so that it never sends a client back; then the
	// old one, whose clients then get MOVED; then the rest.
	order := []*Node{to, from}
	for _, m := range c.Masters() {
		if m != to && m != from {
			order = append(order, m)
		}
	}
	for _, m := range order {
		if _, err := m.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", to.ID); err != nil {
			return fmt.Errorf("testbench: %s: CLUSTER SETSLOT %d NODE: %w", m, slot, err)
		}
	}
	return poll(ctx, "slot migration spreading", 50*time.Millisecond, func(ctx context.Context) error {
		for _, n := range c.live() {
			ranges, err := clusterSlots(ctx, n)
			if err != nil {
				return err
			}
			for _, r := range ranges {
				if r.start <= slot && slot <= r.end && r.master.id != to.ID {
					return fmt.Errorf("%s still has slot %d at %.8s", n, slot, r.master.id)
				}
			}
		}
		return nil
	})
}

// FlushScripts runs SCRIPT FLUSH on every running node. Stopped and killed
// nodes have no scripts when they restart; paused nodes are skipped and
// keep theirs.
func (c *Cluster) FlushScripts(ctx context.Context) error {
	ctx, cancel := withDefaultTimeout(ctx, defaultWaitTimeout)
	defer cancel()
	var errs []error
	for _, n := range c.live() {
		if _, err := n.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Restart stops every node gracefully (replicas first, then masters, each
// with SHUTDOWN SAVE; paused nodes are resumed first), starts every node
// again, including those that were down, and waits until the cluster is
// healthy. Data and roles are kept.
func (c *Cluster) Restart(ctx context.Context) error {
	ctx, cancel := withDefaultTimeout(ctx, defaultStartTimeout)
	defer cancel()
	for _, n := range c.Nodes {
		if n.getState() == paused {
			if err := n.Resume(); err != nil {
				return err
			}
		}
	}
	masters, replicas := c.roles()
	for _, group := range [][]*Node{replicas, masters} {
		if err := each(group, func(n *Node) error { return n.stop(ctx) }); err != nil {
			return err
		}
	}
	if err := each(c.Nodes, func(n *Node) error { return n.Restart(ctx) }); err != nil {
		return err
	}
	return c.WaitHealthy(ctx)
}

// each runs f on every node concurrently and joins the errors.
func each(nodes []*Node, f func(*Node) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = f(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close kills every node, frees what the provider holds and removes the
// nodes' directories. It is safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	err := each(c.Nodes, (*Node).Close)
	if rerr := os.RemoveAll(c.root); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}

// nodeEntry is one line of CLUSTER NODES.
type nodeEntry struct {
	id        string
	addr      string // ip:port
	flagText  string
	flags     map[string]bool
	master    string // the master's id for a replica, else ""
	link      string // connected or disconnected
	slots     [][2]int
	migrating bool // an [slot->-id] or [slot-<-id] entry
}

func clusterNodes(ctx context.Context, n *Node) ([]nodeEntry, error) {
	v, err := n.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	return parseClusterNodes(asString(v))
}

func parseClusterNodes(text string) ([]nodeEntry, error) {
	var entries []nodeEntry
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("testbench: bad CLUSTER NODES line %q", line)
		}
		e := nodeEntry{id: f[0], flagText: f[2], flags: map[string]bool{}, link: f[7]}
		e.addr, _, _ = strings.Cut(f[1], "@")
		for _, fl := range strings.Split(f[2], ",") {
			e.flags[fl] = true
		}
		if f[3] != "-" {
			e.master = f[3]
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				e.migrating = true
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := a, error(nil)
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("testbench: bad slot %q in CLUSTER NODES line %q", s, line)
			}
			e.slots = append(e.slots, [2]int{a, b})
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// slotRange is one entry of CLUSTER SLOTS.
type slotRange struct {
	start, end int
	master     slotNode
	replicas   []slotNode
}

type slotNode struct {
	addr, id string
}

func clusterSlots(ctx context.Context, n *Node) ([]slotRange, error) {
	v, err := n.Do(ctx, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	return parseClusterSlots(v)
}

func parseClusterSlots(v any) ([]slotRange, error) {
	var ranges []slotRange
	for _, item := range asArray(v) {
		a := asArray(item)
		if len(a) < 3 {
			return nil, fmt.Errorf("testbench: bad CLUSTER SLOTS entry %v", item)
		}
		r := slotRange{start: int(asInt(a[0])), end: int(asInt(a[1]))}
		for i, nv := range a[2:] {
			na := asArray(nv)
			if len(na) < 3 {
				return nil, fmt.Errorf("testbench: bad CLUSTER SLOTS node %v", nv)
			}
			sn := slotNode{addr: net.JoinHostPort(asString(na[0]), asString(na[1])), id: asString(na[2])}
			if i == 0 {
				r.master = sn
			} else {
				r.replicas = append(r.replicas, sn)
			}
		}
		ranges = append(ranges, r)
	}
	return ranges, nil
}

// shardsHealth returns each node's health in n's CLUSTER SHARDS, by id.
func shardsHealth(ctx context.Context, n *Node) (map[string]string, error) {
	v, err := n.Do(ctx, "CLUSTER", "SHARDS")
	if err != nil {
		return nil, err
	}
	health := map[string]string{}
	for _, shard := range asArray(v) {
		for _, nv := range asArray(asMap(shard)["nodes"]) {
			m := asMap(nv)
			health[asString(m["id"])] = asString(m["health"])
		}
	}
	return health, nil
}
