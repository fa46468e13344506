package testbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Node is one server: a single node or a member of a Cluster.
type Node struct {
	// Addr is the "host:port" to dial; for a cluster node it is also the
	// address the node announces to the cluster.
	Addr string
	// Kind is the server family.
	Kind Kind
	// Version is the server's version from INFO server: redis_version for
	// Redis, valkey_version for Valkey (whose redis_version is a fixed
	// compatibility value).
	Version string
	// ID is the cluster node id; "" for a single node.
	ID string
	// Port is the client port; the cluster bus is Port+10000.
	Port int
	// Dir is the node's directory: its configuration (node.conf), log
	// (server.log), nodes.conf and dump.rdb.
	Dir string
	// Provider is the Name of the provider that runs the server, such as
	// "processes" or "docker ratelua/servers:local".
	Provider string

	spec  Spec
	inst  Instance
	claim *portClaim
	root  string // a single node's temporary root, removed by Close

	mu     sync.Mutex
	state  nodeState
	closed bool
	conns  chan *respConn // idle connections for Do
}

type nodeState int

const (
	running nodeState = iota
	paused
	down // stopped or killed
)

func (s nodeState) String() string {
	return [...]string{"running", "paused", "down"}[s]
}

// String names the node in messages: kind, address and the start of its
// cluster id.
func (n *Node) String() string {
	if n.ID != "" {
		return fmt.Sprintf("%s %s (%.8s)", n.Kind, n.Addr, n.ID)
	}
	return fmt.Sprintf("%s %s", n.Kind, n.Addr)
}

func (n *Node) getState() nodeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

func (n *Node) setState(s nodeState) {
	n.mu.Lock()
	n.state = s
	n.mu.Unlock()
}

// Running reports whether the node's server runs and is not paused.
func (n *Node) Running() bool { return n.getState() == running }

// Do sends one command on a connection of its own (connections are reused)
// and returns the reply as Go values: string for simple and bulk strings,
// int64 for integers, []any for arrays, nil for a null reply. An error
// reply is returned as a ReplyError error (and inside an array as a
// ReplyError element). Without a deadline in ctx, Do gives up after 10 s.
func (n *Node) Do(ctx context.Context, args ...string) (any, error) {
	if len(args) == 0 {
		return nil, errors.New("testbench: Do needs a command")
	}
	var rc *respConn
	select {
	case rc = <-n.conns:
	default:
		var err error
		if rc, err = dialRESP(ctx, n.Addr); err != nil {
			return nil, fmt.Errorf("testbench: %s: %w", n, err)
		}
	}
	v, err := rc.do(ctx, args...)
	var re ReplyError
	if err != nil && !errors.As(err, &re) {
		rc.Close()
		return nil, fmt.Errorf("testbench: %s: %s: %w", n, args[0], err)
	}
	select {
	case n.conns <- rc:
	default:
		rc.Close()
	}
	return v, err
}

// dropConns closes the idle connections (the server went away).
func (n *Node) dropConns() {
	for {
		select {
		case rc := <-n.conns:
			rc.Close()
		default:
			return
		}
	}
}

// Stop shuts the server down gracefully with SHUTDOWN SAVE, so that a
// Restart finds its data, and waits until it has exited. A paused node is
// resumed first; a node that is down already is left alone.
func (n *Node) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return n.stop(ctx)
}

func (n *Node) stop(ctx context.Context) error {
	switch n.getState() {
	case down:
		return nil
	case paused:
		if err := n.Resume(); err != nil {
			return err
		}
	}
	n.dropConns()
	_, err := n.Do(ctx, "SHUTDOWN", "SAVE")
	var re ReplyError
	if errors.As(err, &re) { // refused; the server runs on
		return fmt.Errorf("testbench: %s: SHUTDOWN SAVE: %w\n%s", n, err, n.logTail())
	}
	// Success closes the connection without a reply.
	select {
	case <-n.inst.Done():
		n.setState(down)
		return nil
	case <-ctx.Done():
		n.inst.Kill()
		n.setState(down)
		return fmt.Errorf("testbench: %s did not exit after SHUTDOWN SAVE (killed it): %w\n%s", n, ctx.Err(), n.logTail())
	}
}

// Kill ends the server at once with SIGKILL, like a crash: whatever was not
// saved is lost. The node can Restart.
func (n *Node) Kill() error {
	n.dropConns()
	if n.getState() == paused {
		n.inst.Resume() // a paused container cannot always be killed
	}
	err := n.inst.Kill()
	n.setState(down)
	return err
}

// Pause freezes the server (SIGSTOP, or a paused container): it keeps its
// connections but answers nothing, like a hung node. Resume ends it.
func (n *Node) Pause() error {
	if s := n.getState(); s != running {
		return fmt.Errorf("testbench: cannot pause %s: it is %s", n, s)
	}
	if err := n.inst.Pause(); err != nil {
		return err
	}
	n.setState(paused)
	return nil
}

// Resume continues a paused server (SIGCONT).
func (n *Node) Resume() error {
	if s := n.getState(); s != paused {
		return fmt.Errorf("testbench: cannot resume %s: it is %s", n, s)
	}
	if err := n.inst.Resume(); err != nil {
		return err
	}
	n.setState(running)
	return nil
}

// Restart starts the server again on the same port and directory, so it
// finds its data (as of its last SHUTDOWN SAVE, or the RDB a replica
// received) and, in a cluster, its nodes.conf: the same node id, epoch and
// view of the cluster. A node that still runs is stopped gracefully first.
// Restart returns when the server answers; it does not wait for the
// cluster (see Cluster.WaitHealthy).
func (n *Node) Restart(ctx context.Context) error {
	ctx, cancel := withDefaultTimeout(ctx, defaultStartTimeout)
	defer cancel()
	if n.getState() != down {
		if err := n.stop(ctx); err != nil {
			return err
		}
	}
	n.mu.Lock()
	closed := n.closed
	n.mu.Unlock()
	if closed {
		return fmt.Errorf("testbench: %s is closed", n)
	}
	if err := n.inst.Start(ctx); err != nil {
		return err
	}
	if err := n.waitReady(ctx); err != nil {
		n.inst.Kill()
		return err
	}
	n.setState(running)
	return nil
}

// Close kills the server, frees what its provider holds and, for a single
// node from StartNode, removes its directory. It is safe to call more than
// once.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	n.dropConns()
	if n.getState() == paused {
		n.inst.Resume()
	}
	err := n.inst.Remove()
	n.setState(down)
	n.claim.release()
	if n.root != "" {
		if rerr := os.RemoveAll(n.root); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// errAddrInUse marks a start that failed because its port was taken.
var errAddrInUse = errors.New("address already in use")

// launchNode starts one node in a new directory under root, on a port it
// reserves, retrying on another port when the server finds its port taken.
func launchNode(ctx context.Context, prov Provider, kind Kind, root string, cluster []string, user []string) (*Node, error) {
	for attempt := 1; ; attempt++ {
		claim, err := reservePort()
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(root, "node-"+strconv.Itoa(claim.port))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			claim.release()
			return nil, fmt.Errorf("testbench: %w", err)
		}
		spec := Spec{
			Kind:       kind,
			Port:       claim.port,
			BusPort:    claim.port + busOffset,
			Dir:        dir,
			ConfigFile: filepath.Join(dir, "node.conf"),
			LogFile:    filepath.Join(dir, "server.log"),
		}
		spec.Config = append(append(baseConfig(spec), cluster...), user...)
		n, err := launchSpec(ctx, prov, spec, claim)
		if err == nil {
			return n, nil
		}
		claim.release()
		os.RemoveAll(dir)
		if !errors.Is(err, errAddrInUse) || attempt == addrInUseAttempts {
			return nil, err
		}
	}
}

func launchSpec(ctx context.Context, prov Provider, spec Spec, claim *portClaim) (*Node, error) {
	inst, err := prov.Launch(ctx, spec)
	if err != nil {
		return nil, err
	}
	n := &Node{
		Addr:     inst.Addr(),
		Kind:     spec.Kind,
		Port:     spec.Port,
		Dir:      spec.Dir,
		Provider: prov.Name(),
		spec:     spec,
		inst:     inst,
		claim:    claim,
		conns:    make(chan *respConn, 4),
	}
	if err := n.waitReady(ctx); err != nil {
		inst.Remove()
		return nil, err
	}
	return n, nil
}

// waitReady polls until the server answers PING and INFO server shows that
// it is this node (its config_file), then sets Version.
func (n *Node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	done := n.inst.Done()
	// A probe answered by whoever else holds the port must not outlive our
	// server.
	probeCtx, cancelProbe := context.WithCancel(ctx)
	defer cancelProbe()
	go func() {
		select {
		case <-done:
			cancelProbe()
		case <-probeCtx.Done():
		}
	}()
	var last error
	for {
		select {
		case <-done:
			return n.startError(errors.New("exited before answering PING"))
		case <-ctx.Done():
			return n.startError(fmt.Errorf("no answer: %w (last: %v)", ctx.Err(), last))
		default:
		}
		if last = n.probe(probeCtx); last == nil {
			return nil
		}
		n.dropConns()
		time.Sleep(20 * time.Millisecond)
	}
}

func (n *Node) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	pong, err := n.Do(pctx, "PING")
	if err != nil {
		return err
	}
	if pong != "PONG" {
		return fmt.Errorf("PING answered %q", pong)
	}
	info, err := n.Do(pctx, "INFO", "server")
	if err != nil {
		return err
	}
	f := infoFields(info)
	if got := f["config_file"]; got != n.spec.ConfigFile {
		return fmt.Errorf("port %d is answered by another server (config_file %q)", n.Port, got)
	}
	version := f["redis_version"]
	if n.Kind == Valkey {
		version = f["valkey_version"]
	}
	if version == "" {
		return fmt.Errorf("INFO server has no version for %s", n.Kind)
	}
	n.Version = version
	return nil
}

// startError names the server, the port and the log's telling line.
func (n *Node) startError(err error) error {
	tail := readLogTail(n.spec.LogFile)
	line := relevantLine(tail)
	if strings.Contains(strings.ToLower(strings.Join(tail, "\n")), "address already in use") {
		err = fmt.Errorf("%w: %v", errAddrInUse, err)
	}
	return fmt.Errorf("testbench: %s on port %d: %w: %s\nserver log %s:\n\t%s",
		n.inst.Describe(), n.Port, err, line, n.spec.LogFile, strings.Join(tail, "\n\t"))
}

// logTail returns the last lines of the node's log, for messages.
func (n *Node) logTail() string {
	return "server log " + n.spec.LogFile + ":\n\t" + strings.Join(readLogTail(n.spec.LogFile), "\n\t")
}

func readLogTail(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{"(no server log: " + err.Error() + ")"}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return lines
}

// relevantLine picks the log line that most likely says why a server did
// not start: the last one that reads like an error, or else the last line.
func relevantLine(lines []string) string {
	// A configuration error: ">>> 'the line'" and then the reason.
	for i, l := range lines {
		if strings.HasPrefix(l, ">>> ") && i+1 < len(lines) {
			return strings.TrimSpace(lines[i+1]) + ": " + l[len(">>> "):]
		}
	}
	markers := []string{"address already in use", "fatal", "bad directive", "wrong number of arguments",
		"can't", "cannot", "error", "failed", "denied", "invalid"}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.ToLower(lines[i])
		for _, m := range markers {
			if strings.Contains(l, m) {
				return strings.TrimSpace(lines[i])
			}
		}
	}
	if len(lines) > 0 {
		return strings.TrimSpace(lines[len(lines)-1])
	}
	return ""
}
