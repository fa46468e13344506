package ratelua

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ratelua/ratelua/internal/manifest"
)

// scriptID names a script version in a Registry.
type scriptID struct {
	name    string
	version int
}

func (s Script) id() scriptID { return scriptID{s.Name, s.Version} }

// Registry holds script versions by name and version: the embedded ones
// and any registered at run time, which a limiter may then call
// (Options.Registry and Options.Version). A version, once registered, is
// immutable. A Registry is safe for concurrent use.
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
	if _, _, ok := manifest.ParseFileName(fmt.Sprintf("%s.v%d.lua", name, version)); !ok {
		return Script{}, fmt.Errorf("ratelua: script name %s version %d: want a lower-case name and a version >= 1", name, version)
	}
	s := Script{Name: name, Version: version, Source: source, SHA1: manifest.SHA1([]byte(source))}
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
