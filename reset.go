package ratelua

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ratelua/ratelua/internal/wire"
)

// ResetMany resets the state of many event keys: the negative-eventCount
// call of the contract for each, in one round trip per node where the
// client batches. The error joins every failure.
func (l *Limiter) ResetMany(ctx context.Context, eventKeys []string) error {
	if len(eventKeys) == 0 {
		return nil
	}
	now, err := l.now()
	if err != nil {
		return err
	}
	calls := make([]Call, len(eventKeys))
	if l.hot != nil {
		// The resets drop the keys' batches, before and after.
		for _, k := range eventKeys {
			l.hot.forget(k)
		}
		defer func() {
			for _, k := range eventKeys {
				l.hot.forget(k)
			}
		}()
	}
	for i, k := range eventKeys {
		l.chain.Forget(k)
		calls[i] = l.newCall(l.Key(k), l.appendArgs(make([]string, 0, 4+len(l.limits)), -1, now))
	}
	var errs []error
	_, callErrs := l.exec(ctx, calls)
	// Once answered too, so that no denial in flight is stored.
	for _, k := range eventKeys {
		l.chain.Deny.Changed(k)
	}
	for i, err := range callErrs {
		if err != nil {
			errs = append(errs, fmt.Errorf("reset %s: %w", quote(eventKeys[i]), classify(l.script.String(), err)))
		}
	}
	return errors.Join(errs...)
}

// resetScan is the SCAN COUNT hint, and so the most keys one UNLINK takes.
const resetScan = 500

// ResetPrefix deletes the state of every limiter whose Options.Prefix is
// exactly prefix, on every master of the client: the keys
// <prefix>:{<event key>}:<script>:v<N>:<hash>, and no other key (not
// "<prefix>:session:42", not the keys of a limiter whose prefix is
// "<prefix>:admin"). It walks each master with SCAN (never KEYS) and
// UNLINKs each page's matching keys in one command. With dryRun it deletes
// nothing and counts the keys it would delete. progress, if not nil, is
// called after each page with the count so far. It returns how many keys
// it deleted (or would delete). The client must list its nodes (see
// Client), else the error wraps ErrNotSupported.
//
// Deprecated: use ResetPrefixWith, whose options are named:
// ResetPrefix(ctx, client, prefix, dryRun, progress) is
// ResetPrefixWith(ctx, client, prefix, ResetOptions{DryRun: dryRun, Progress: progress}).
func ResetPrefix(ctx context.Context, client Client, prefix string, dryRun bool, progress func(keys int64)) (int64, error) {
	return ResetPrefixWith(ctx, client, prefix, ResetOptions{DryRun: dryRun, Progress: progress})
}

// ResetOptions are the options of ResetPrefixWith. The zero value deletes
// the keys and reports nothing on the way.
type ResetOptions struct {
	// DryRun deletes nothing: ResetPrefixWith counts the keys it would
	// delete.
	DryRun bool
	// Progress, if not nil, is called after each page with the count so
	// far.
	Progress func(keys int64)
}

// ResetPrefixWith deletes the state of every limiter whose Options.Prefix
// is exactly prefix, on every master of the client: the keys
// <prefix>:{<event key>}:<script>:v<N>:<hash>, and no other key (not
// "<prefix>:session:42", not the keys of a limiter whose prefix is
// "<prefix>:admin"). It walks each master with SCAN (never KEYS) and
// UNLINKs each page's matching keys in one command; opts.DryRun deletes
// nothing and counts instead, and opts.Progress follows the count. It
// returns how many keys it deleted (or would delete). The client must
// list its nodes (a NodeLister), else the error wraps ErrNotSupported.
func ResetPrefixWith(ctx context.Context, client Client, prefix string, opts ResetOptions) (int64, error) {
	if err := checkPrefix(prefix); err != nil {
		return 0, err
	}
	masters, err := nodes(ctx, client, true)
	if err != nil {
		return 0, err
	}
	pattern := globEscape(prefix) + ":{*}:*:v*:*"
	var count int64
	for _, n := range masters {
		cursor := "0"
		for {
			reply, err := n.Do(ctx, "SCAN", cursor, "MATCH", pattern, "COUNT", strconv.Itoa(resetScan))
			if err != nil {
				return count, fmt.Errorf("ratelua: scan %s: %w", n.Addr, unreachable(err))
			}
			next, keys, err := scanReply(reply)
			if err != nil {
				return count, fmt.Errorf("ratelua: scan %s: %w", n.Addr, err)
			}
			// One UNLINK per slot: a cluster node refuses keys of two slots
			// in one command.
			bySlot := map[int][]string{}
			var slots []int
			for _, k := range keys {
				if !wire.IsStateKey(prefix, k) {
					continue
				}
				s := wire.Slot(k)
				if bySlot[s] == nil {
					slots = append(slots, s)
					bySlot[s] = []string{"UNLINK"}
				}
				bySlot[s] = append(bySlot[s], k)
			}
			for _, s := range slots {
				if opts.DryRun {
					count += int64(len(bySlot[s]) - 1)
					continue
				}
				deleted, err := n.Do(ctx, bySlot[s]...)
				if err != nil {
					return count, fmt.Errorf("ratelua: unlink on %s: %w", n.Addr, unreachable(err))
				}
				d, ok := deleted.(int64)
				if !ok {
					return count, fmt.Errorf("ratelua: unlink on %s answered %T, want an integer", n.Addr, deleted)
				}
				count += d
			}
			if len(slots) > 0 && opts.Progress != nil {
				opts.Progress(count)
			}
			if cursor = next; cursor == "0" {
				break
			}
		}
	}
	return count, nil
}

// scanReply reads a SCAN reply: the next cursor and the keys.
func scanReply(reply any) (string, []string, error) {
	pair, ok := reply.([]any)
	if !ok || len(pair) != 2 {
		return "", nil, fmt.Errorf("SCAN answered %T, want [cursor keys]", reply)
	}
	cursor, ok := pair[0].(string)
	if !ok {
		return "", nil, fmt.Errorf("SCAN answered a cursor of type %T", pair[0])
	}
	elements, ok := pair[1].([]any)
	if !ok {
		return "", nil, fmt.Errorf("SCAN answered keys of type %T", pair[1])
	}
	keys := make([]string, 0, len(elements))
	for _, e := range elements {
		k, ok := e.(string)
		if !ok {
			return "", nil, fmt.Errorf("SCAN answered a key of type %T", e)
		}
		keys = append(keys, k)
	}
	return cursor, keys, nil
}

// globEscape escapes the SCAN MATCH pattern characters of s.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
