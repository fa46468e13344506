package ratelua

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redis/rueidis"
)

// ResetMany resets the state of many event keys: the negative-eventCount
// call of the contract for each, pipelined in one round trip per node. The
// error joins every failure.
func (l *Limiter) ResetMany(ctx context.Context, eventKeys []string) error {
	calls := make([]Call, len(eventKeys))
	for i, k := range eventKeys {
		calls[i] = Call{Keys: []string{l.Key(k)}, Args: l.Args(-1)}
	}
	var errs []error
	if len(calls) == 0 {
		return nil
	}
	for i, resp := range l.exec(ctx, calls) {
		if err := resp.Error(); err != nil {
			errs = append(errs, fmt.Errorf("reset %q: %w", eventKeys[i], classify(l.script, err)))
		}
	}
	return errors.Join(errs...)
}

// ResetPrefix deletes every key under prefix + ":" on every master the
// client knows: a cursor-based SCAN per master (never KEYS) and UNLINK in
// pipelined batches of at most batch keys (0 means 500). progress, if not
// nil, is called after each batch with the number of keys deleted so far.
// It returns how many keys were deleted.
func ResetPrefix(ctx context.Context, client rueidis.Client, prefix string, batch int, progress func(deleted int64)) (int64, error) {
	if prefix == "" || strings.ContainsAny(prefix, "{}") {
		return 0, &LimitError{Index: -1, Field: "prefix", Reason: fmt.Sprintf("must be non-empty without '{' or '}', got %q", prefix)}
	}
	if batch <= 0 {
		batch = 500
	}
	pattern := globEscape(prefix) + ":*"
	nodes := client.Nodes()
	addrs := slices.Sorted(maps.Keys(nodes))
	var deleted int64
	for _, addr := range addrs {
		node := nodes[addr]
		master, err := isMaster(ctx, node)
		if err != nil {
			return deleted, fmt.Errorf("ratelua: reset prefix on %s: %w", addr, classify(Script{Name: "reset"}, err))
		}
		if !master {
			continue
		}
		cursor := uint64(0)
		for {
			entry, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(int64(batch)).Build()).AsScanEntry()
			if err != nil {
				return deleted, fmt.Errorf("ratelua: scan %s: %w", addr, classify(Script{Name: "reset"}, err))
			}
			if len(entry.Elements) > 0 {
				cmds := make(rueidis.Commands, len(entry.Elements))
				for i, k := range entry.Elements {
					cmds[i] = node.B().Unlink().Key(k).Build()
				}
				for _, resp := range node.DoMulti(ctx, cmds...) {
					n, err := resp.AsInt64()
					if err != nil {
						return deleted, fmt.Errorf("ratelua: unlink on %s: %w", addr, classify(Script{Name: "reset"}, err))
					}
					deleted += n
				}
				if progress != nil {
					progress(deleted)
				}
			}
			cursor = entry.Cursor
			if cursor == 0 {
				break
			}
		}
	}
	return deleted, nil
}

// isMaster asks a node for its ROLE.
func isMaster(ctx context.Context, node rueidis.Client) (bool, error) {
	role, err := node.Do(ctx, node.B().Role().Build()).ToArray()
	if err != nil {
		return false, err
	}
	if len(role) == 0 {
		return false, errors.New("empty ROLE reply")
	}
	name, err := role[0].ToString()
	return name == "master", err
}

// globEscape escapes the SCAN MATCH pattern characters of s.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
