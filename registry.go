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
	scripts map[scriptID]*entry
}

type entry struct {
	script Script
	lua    *rueidis.Lua
}

// NewRegistry returns a registry of the embedded scripts.
func NewRegistry() *Registry {
	r := &Registry{scripts: map[scriptID]*entry{}}
	for _, s := range Scripts() {
		r.scripts[s.id()] = &entry{script: s, lua: s.Lua()}
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
		if old.script.SHA1 != s.SHA1 {
			return Script{}, fmt.Errorf("%w: %s has SHA1 %s, not %s", ErrImmutable, s, old.script.SHA1, s.SHA1)
		}
		return old.script, nil
	}
	r.scripts[s.id()] = &entry{script: s, lua: s.Lua()}
	return s, nil
}

// Lookup returns the script name at version.
func (r *Registry) Lookup(name string, version int) (Script, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e, ok := r.scripts[scriptID{name, version}]; ok {
		return e.script, nil
	}
	return Script{}, fmt.Errorf("%w: %s@v%d", ErrUnknownScript, name, version)
}

// Latest returns the highest registered version of the script name.
func (r *Registry) Latest(name string) (Script, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var latest *Script
	for _, e := range r.scripts {
		if e.script.Name == name && (latest == nil || e.script.Version > latest.Version) {
			latest = &e.script
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
	for _, e := range r.scripts {
		out = append(out, e.script)
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

func (r *Registry) entry(s Script) (*entry, error) {
	r.mu.RLock()
	e, ok := r.scripts[s.id()]
	r.mu.RUnlock()
	if !ok || e.script.SHA1 != s.SHA1 {
		return nil, fmt.Errorf("%w: %s with SHA1 %s is not registered", ErrUnknownScript, s, s.SHA1)
	}
	return e, nil
}

// Exec runs a registered script once: EVALSHA, then EVAL on NOSCRIPT. Keys
// that span two cluster slots are refused with ErrCrossSlot before any
// round trip.
func (r *Registry) Exec(ctx context.Context, client rueidis.Client, s Script, keys, args []string) rueidis.RedisResult {
	e, err := r.entry(s)
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	if err := SameSlot(keys...); err != nil {
		return rueidis.NewErrorResult(err)
	}
	return e.lua.Exec(ctx, client, keys, args)
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
	if _, err := r.entry(s); err != nil {
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
