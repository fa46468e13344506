package ratelua

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/internal/luagen"
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

// FunctionLibrary returns the library of the newest embedded release, the
// one the limiters call by default.
func FunctionLibrary() Library {
	version := 0
	for _, s := range Scripts() {
		version = max(version, s.Version)
	}
	lib, err := ReleaseLibrary(version)
	if err != nil {
		// Checked by the package's tests; a broken build has no library.
		return Library{Name: luagen.LibraryName(version), Version: version}
	}
	return lib
}

// ReleaseLibrary returns the library of one embedded release: every script
// of that version as a function. Older releases stay loadable so that
// services pinned to them keep working during an upgrade.
func ReleaseLibrary(version int) (Library, error) {
	src, err := luaFiles.ReadFile("lua/" + luagen.LibraryFile(version))
	if err != nil {
		return Library{}, fmt.Errorf("ratelua: no embedded library of release v%d: %w", version, ErrUnknownScript)
	}
	return Library{Name: luagen.LibraryName(version), Version: version, Source: string(src)}, nil
}

// Function returns the function name of a script in its release's library.
func (s Script) Function() string { return luagen.FunctionName(s.Name, s.Version) }

// LoadFunctions loads the library (FUNCTION LOAD REPLACE) on every master
// the client knows; replicas receive it by replication. It reports per
// master what it did, sorted by address.
func LoadFunctions(ctx context.Context, client rueidis.Client, lib Library) ([]NodeLoad, error) {
	if lib.Source == "" {
		return nil, fmt.Errorf("ratelua: library %s has no source", lib.Name)
	}
	nodes := client.Nodes()
	addrs := slices.Sorted(maps.Keys(nodes))
	var report []NodeLoad
	var first error
	for _, addr := range addrs {
		node := nodes[addr]
		master, err := isMaster(ctx, node)
		if err == nil && !master {
			continue
		}
		nl := NodeLoad{Addr: addr}
		if err == nil {
			err = node.Do(ctx, node.B().FunctionLoad().Replace().FunctionCode(lib.Source).Build()).Error()
		}
		if err != nil {
			nl.Err = fmt.Errorf("ratelua: load library %s on %s: %w", lib.Name, addr, err)
			if first == nil {
				first = nl.Err
			}
		} else {
			nl.Loaded = 1
		}
		report = append(report, nl)
	}
	return report, first
}

// isFunctionMissing reports an FCALL of a function no library registered.
func isFunctionMissing(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.Contains(strings.ToLower(re.Error()), "function not found")
}

// fcall runs calls of an embedded script by FCALL, in one round trip per
// node. When a node answers that the function does not exist (a node that
// never had the library), the library is loaded on every master and just
// those calls are retried once.
func fcall(ctx context.Context, client rueidis.Client, s Script, calls []Call) []rueidis.RedisResult {
	build := func(c Call) rueidis.Completed {
		return client.B().Fcall().Function(s.Function()).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(c.Args...).Build()
	}
	cmds := make(rueidis.Commands, len(calls))
	for i, c := range calls {
		cmds[i] = build(c)
	}
	out := client.DoMulti(ctx, cmds...)
	var retry []int
	for i, resp := range out {
		if isFunctionMissing(resp.Error()) {
			retry = append(retry, i)
		}
	}
	if len(retry) == 0 {
		return out
	}
	lib, err := ReleaseLibrary(s.Version)
	if err != nil {
		return out
	}
	if _, err := LoadFunctions(ctx, client, lib); err != nil {
		for _, i := range retry {
			out[i] = rueidis.NewErrorResult(err)
		}
		return out
	}
	again := make(rueidis.Commands, len(retry))
	for j, i := range retry {
		again[j] = build(calls[i])
	}
	for j, resp := range client.DoMulti(ctx, again...) {
		out[retry[j]] = resp
	}
	return out
}
