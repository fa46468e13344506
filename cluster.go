// This file is what is about clusters: the prefix and the state keys whose
// {hash tag} puts all the state of an event key in one slot (built by
// internal/wire), and the work that must reach every node (listing them,
// loading scripts and the Functions library on each). Batches sent one
// round trip per node are the wire's (wire.go).

package ratelua

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ratelua/ratelua/internal/wire"
)

// maxPrefix is the longest Prefix.
const maxPrefix = 128

// checkPrefix refuses a prefix that would make state keys ambiguous.
func checkPrefix(prefix string) error {
	switch {
	case prefix == "":
		return &LimitError{Index: -1, Field: "Prefix", Reason: "is empty"}
	case len(prefix) > maxPrefix:
		return &LimitError{Index: -1, Field: "Prefix", Reason: fmt.Sprintf("must be at most %d bytes, got %d", maxPrefix, len(prefix))}
	case strings.ContainsAny(prefix, "{}"):
		return &LimitError{Index: -1, Field: "Prefix", Reason: "may not contain '{' or '}', got " + quote(prefix)}
	}
	return nil
}

// stateKey builds the state key of eventKey for a script and a limits
// hash: <prefix>:{<escaped event key>}:<name>:v<N>:<hash>, N the script's
// state version. All state of one event key shares the slot of its tag; a
// change of state version or limits starts fresh state.
func stateKey(prefix, eventKey string, s Script, hash string) string {
	return wire.StateKey(prefix, eventKey, s.Name, stateVersion(s), hash)
}

// stateVersion is the version whose state s reads and writes.
func stateVersion(s Script) int {
	if s.StateVersion > 0 {
		return s.StateVersion
	}
	return s.Version
}

// nodes lists the client's nodes sorted by address; with masters, only
// those whose ROLE is master.
func nodes(ctx context.Context, client Client, masters bool) ([]Node, error) {
	lister, ok := client.(NodeLister)
	if !ok {
		return nil, fmt.Errorf("%w: %T lists no nodes", ErrNotSupported, client)
	}
	all, err := lister.Nodes(ctx)
	if err != nil {
		return nil, unreachable(fmt.Errorf("ratelua: list nodes: %w", err))
	}
	byAddr := map[string]Node{}
	for _, n := range all {
		byAddr[n.Addr] = n
	}
	var out []Node
	for _, addr := range slices.Sorted(maps.Keys(byAddr)) {
		n := byAddr[addr]
		if masters {
			master, err := isMaster(ctx, n)
			if err != nil {
				return nil, fmt.Errorf("ratelua: ROLE on %s: %w", addr, err)
			}
			if !master {
				continue
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// isMaster asks a node for its ROLE.
func isMaster(ctx context.Context, n Node) (bool, error) {
	reply, err := n.Do(ctx, "ROLE")
	if err != nil {
		return false, err
	}
	role, ok := reply.([]any)
	if !ok || len(role) == 0 {
		return false, fmt.Errorf("ROLE answered %T, want an array", reply)
	}
	name, ok := role[0].(string)
	if !ok {
		return false, fmt.Errorf("ROLE answered %T as its first element, want a string", role[0])
	}
	return name == "master", nil
}

// onEveryNode runs do on every node of the client (only the masters when
// masters is set), in address order, and reports each node's address with
// its failure (nil where do succeeded); the error is the first failure.
// The client must list its nodes (see Client), else the error wraps
// ErrNotSupported.
func onEveryNode(ctx context.Context, client Client, masters bool, do func(n Node) error) (map[string]error, error) {
	all, err := nodes(ctx, client, masters)
	if err != nil {
		return nil, err
	}
	report := map[string]error{}
	var first error
	for _, n := range all {
		err := do(n)
		if first == nil {
			first = err
		}
		report[n.Addr] = err
	}
	return report, first
}

// Load puts every registered script on every node of the client (masters
// and replicas, which need the script after a failover) by SCRIPT LOAD. It
// reports each node's address with its first failure, nil when every
// script loaded there; the error is the first failure. Limiters do not
// need it (they answer NOSCRIPT with EVAL); it saves that one extra round
// trip per node and script. The client must list its nodes (see Client),
// else the error wraps ErrNotSupported.
func (r *Registry) Load(ctx context.Context, client Client) (map[string]error, error) {
	scripts := r.All()
	return onEveryNode(ctx, client, false, func(n Node) error {
		for _, s := range scripts {
			sha, err := n.Do(ctx, "SCRIPT", "LOAD", s.Source)
			if err == nil && sha != s.SHA1 {
				err = fmt.Errorf("loaded as %v, want %s", sha, s.SHA1)
			}
			if err != nil {
				return fmt.Errorf("ratelua: load %s on %s: %w", s, n.Addr, unreachable(err))
			}
		}
		return nil
	})
}

// LoadFunctions loads the library (FUNCTION LOAD REPLACE) on every master
// of the client; replicas receive it by replication. It reports each
// master's address with its failure, nil when the library loaded there.
// The client must list its nodes (see Client), else the error wraps
// ErrNotSupported.
func LoadFunctions(ctx context.Context, client Client, lib Library) (map[string]error, error) {
	if lib.Source == "" {
		return nil, fmt.Errorf("ratelua: library %s has no source", quote(lib.Name))
	}
	return onEveryNode(ctx, client, true, func(n Node) error {
		if _, err := n.Do(ctx, "FUNCTION", "LOAD", "REPLACE", lib.Source); err != nil {
			return fmt.Errorf("ratelua: load library %s on %s: %w", lib.Name, n.Addr, unreachable(err))
		}
		return nil
	})
}
