package ratelua

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/internal/luagen"
)

// scriptID names a script version in a Registry.
type scriptID struct {
	name    string
	version int
}

func (s Script) id() scriptID { return scriptID{s.Name, s.Version} }

// Registry holds script versions by name and version — the embedded ones
// and any registered at run time — and runs them by EVALSHA with the SHA1
// computed locally, falling back to EVAL (which loads the script) on
// NOSCRIPT. A version, once registered, is immutable. A Registry is safe for
// concurrent use.
type Registry struct {
	mu      sync.RWMutex
	scripts map[scriptID]Script
}

// NewRegistry returns a registry of the embedded scripts.
func NewRegistry() *Registry {
	r := &Registry{scripts: map[scriptID]Script{}}
	for _, s := range Scripts() {
		r.scripts[s.id()] = s
	}
	return r
}

// Register adds a script version. Registering the same source again is a
// no-op; other source under a registered name and version fails with
// ErrImmutable.
func (r *Registry) Register(name string, version int, source string) (Script, error) {
	if _, _, ok := luagen.ParseFileName(fmt.Sprintf("%s.v%d.lua", name, version)); !ok {
		return Script{}, fmt.Errorf("ratelua: script name %q version %d: want a lower-case name and a version >= 1", name, version)
	}
	s := Script{Name: name, Version: version, Source: source, SHA1: luagen.SHA1([]byte(source))}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.scripts[s.id()]; ok {
		if old.SHA1 != s.SHA1 {
			return Script{}, fmt.Errorf("%w: %s has SHA1 %s, not %s", ErrImmutable, s, old.SHA1, s.SHA1)
		}
		return old, nil
	}
	r.scripts[s.id()] = s
	return s, nil
}

// Lookup returns the script name at version.
func (r *Registry) Lookup(name string, version int) (Script, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if s, ok := r.scripts[scriptID{name, version}]; ok {
		return s, nil
	}
	return Script{}, fmt.Errorf("%w: %s@v%d", ErrUnknownScript, name, version)
}

// Latest returns the highest registered version of the script name.
func (r *Registry) Latest(name string) (Script, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var latest *Script
	for _, s := range r.scripts {
		if s.Name == name && (latest == nil || s.Version > latest.Version) {
			latest = &s
		}
	}
	if latest == nil {
		return Script{}, fmt.Errorf("%w: %s", ErrUnknownScript, name)
	}
	return *latest, nil
}

// All returns every registered script, ordered by name and version.
func (r *Registry) All() []Script {
	r.mu.RLock()
	out := make([]Script, 0, len(r.scripts))
	for _, s := range r.scripts {
		out = append(out, s)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Script) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
	return out
}

// check reports whether s is registered, with its SHA1.
func (r *Registry) check(s Script) error {
	r.mu.RLock()
	got, ok := r.scripts[s.id()]
	r.mu.RUnlock()
	if !ok || got.SHA1 != s.SHA1 {
		return fmt.Errorf("%w: %s with SHA1 %s is not registered", ErrUnknownScript, s, s.SHA1)
	}
	return nil
}

// Exec runs a registered script once: EVALSHA, then EVAL on NOSCRIPT. Keys
// that span two cluster slots are refused with ErrCrossSlot before any
// round trip.
func (r *Registry) Exec(ctx context.Context, client rueidis.Client, s Script, keys, args []string) rueidis.RedisResult {
	if err := r.check(s); err != nil {
		return rueidis.NewErrorResult(err)
	}
	if err := SameSlot(keys...); err != nil {
		return rueidis.NewErrorResult(err)
	}
	return evalsha(ctx, client, s, keys, args)
}

// evalsha runs a script once: EVALSHA with the SHA1 computed locally, then
// EVAL (which loads the script on that node) when the node answers
// NOSCRIPT. The keys and arguments go straight into the command builder, so
// a caller may pass slices on its stack.
func evalsha(ctx context.Context, client rueidis.Client, s Script, keys, args []string) rueidis.RedisResult {
	resp := client.Do(ctx, client.B().Evalsha().Sha1(s.SHA1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	if re, ok := rueidis.IsRedisErr(resp.Error()); ok && re.IsNoScript() {
		resp = client.Do(ctx, client.B().Eval().Script(s.Source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	return resp
}

// Call is one execution in a batch.
type Call struct {
	Keys []string
	Args []string
}

// ExecBatch runs a registered script for every call in one round trip per
// node (pipelined EVALSHA); a call whose keys span two cluster slots gets
// an ErrCrossSlot error without reaching the server. Calls answered NOSCRIPT — a node that lost its
// script cache mid-batch, or a promoted replica — are retried once, alone,
// with EVAL, which loads the script on that node. It never sends SCRIPT
// LOAD to every node, unlike rueidis.(*Lua).ExecMulti.
func (r *Registry) ExecBatch(ctx context.Context, client rueidis.Client, s Script, calls []Call) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, len(calls))
	if err := r.check(s); err != nil {
		for i := range out {
			out[i] = rueidis.NewErrorResult(err)
		}
		return out
	}
	// Calls whose keys span two slots are refused here, before any round
	// trip; the others go out together.
	var cmds rueidis.Commands
	var sent []int
	for i, c := range calls {
		if err := SameSlot(c.Keys...); err != nil {
			out[i] = rueidis.NewErrorResult(err)
			continue
		}
		cmds = append(cmds, client.B().Evalsha().Sha1(s.SHA1).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(c.Args...).Build())
		sent = append(sent, i)
	}
	if len(cmds) == 0 {
		return out
	}
	var retry []int
	for j, resp := range client.DoMulti(ctx, cmds...) {
		i := sent[j]
		out[i] = resp
		if re, ok := rueidis.IsRedisErr(resp.Error()); ok && re.IsNoScript() {
			retry = append(retry, i)
		}
	}
	if len(retry) == 0 {
		return out
	}
	again := make(rueidis.Commands, len(retry))
	for j, i := range retry {
		c := calls[i]
		again[j] = client.B().Eval().Script(s.Source).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(c.Args...).Build()
	}
	for j, resp := range client.DoMulti(ctx, again...) {
		out[retry[j]] = resp
	}
	return out
}
