package ratelua

import (
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
