package ratelua

import (
	"context"
	"fmt"

	"github.com/ratelua/ratelua/internal/manifest"
)

// Library is a Redis Functions library (Redis 7+, Valkey) that registers
// every script of one release as a function with the same KEYS/ARGV/reply
// contract: FCALL ratelua_<name>_v<N> 1 <state key> <ARGV...>. Functions
// are persisted and replicated, so unlike EVALSHA they keep working on a
// promoted replica or a restarted node.
type Library struct {
	Name    string // e.g. "ratelua_v1"
	Version int
	Source  string // the exact text for FUNCTION LOAD
}

// ReleaseLibrary returns the library of one embedded release: every script
// of that version as a function; version 0 is the newest release, the one
// limiters call by default. Older releases stay loadable so that services
// pinned to them keep working during an upgrade.
func ReleaseLibrary(version int) (Library, error) {
	if version == 0 {
		for _, s := range Scripts() {
			version = max(version, s.Version)
		}
	}
	src, err := luaFiles.ReadFile("lua/" + manifest.LibraryFile(version))
	if err != nil {
		return Library{}, fmt.Errorf("ratelua: no embedded library of release v%d: %w", version, ErrUnknownScript)
	}
	return Library{Name: manifest.LibraryName(version), Version: version, Source: string(src)}, nil
}

// Function returns the function name of a script in its release's library.
func (s Script) Function() string { return manifest.FunctionName(s.Name, s.Version) }

// LoadFunctions loads the library (FUNCTION LOAD REPLACE) on every master
// of the client; replicas receive it by replication. It reports each
// master's address with its failure, nil when the library loaded there. The client must list its nodes (see
// Client), else the error wraps ErrNotSupported.
func LoadFunctions(ctx context.Context, client Client, lib Library) (map[string]error, error) {
	if lib.Source == "" {
		return nil, fmt.Errorf("ratelua: library %s has no source", quote(lib.Name))
	}
	masters, err := nodes(ctx, client, true)
	if err != nil {
		return nil, err
	}
	report := map[string]error{}
	var first error
	for _, n := range masters {
		var err error
		if _, err = n.Do(ctx, "FUNCTION", "LOAD", "REPLACE", lib.Source); err != nil {
			err = fmt.Errorf("ratelua: load library %s on %s: %w", lib.Name, n.Addr, unreachable(err))
			if first == nil {
				first = err
			}
		}
		report[n.Addr] = err
	}
	return report, first
}
