package ratelua

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ratelua/ratelua/internal/manifest"
)

//go:generate go run ./internal/luagen/cmd/luagen -write

// The script names.
const (
	SlidingWindow = "sliding_window"
	AR1           = "ar1"
	ZSetLog       = "zset_log"
	TokenBucket   = "token_bucket"
	Concurrency   = "concurrency"
	FixedWindow   = "fixed_window"
)

//go:embed lua/*.lua lua/manifest.json
var luaFiles embed.FS

// Script is one released version of a script: its exact source, the SHA1
// by which EVALSHA calls it, and its calling convention in words, as
// published in lua/manifest.json.
type Script struct {
	Name    string
	Version int
	Source  string
	SHA1    string

	Keys  []string // what each KEYS entry is
	Argv  []string // what each ARGV entry is
	Limit []string // the names of the integers of one limit, in order
	Reply []string // what each reply integer is
	Fresh string   // what a fresh state is (reset_after counts down to it)
	State string   // the layout of the state key
	Cost  string   // the commands one decision costs

	// StateVersion is the version whose state this one reads and writes:
	// its own, or an earlier one whose layout and meaning it keeps exactly
	// (v4 keeps v3's, and v5's zset_log too). The Go API's state keys name
	// it, so limiters of the two versions share their state; 0 means
	// Version.
	StateVersion int
}

// String returns "name@vN".
func (s Script) String() string { return fmt.Sprintf("%s@v%d", s.Name, s.Version) }

// Run calls the script once on key with args, as any caller could:
// EVALSHA, then EVAL (which loads the script on that node) when the node
// answers NOSCRIPT. The reply, an array of len(reply) integers, is stored
// in reply; an error reply is a *ServerError naming the script.
func (s Script) Run(ctx context.Context, client Client, key string, args []string, reply []int64) error {
	call := Call{Command: "EVALSHA", Script: s.SHA1, Key: key, Args: args}
	err := client.Run(ctx, call, reply)
	if isNoScript(err) {
		call.Command, call.Script = "EVAL", s.Source
		err = client.Run(ctx, call, reply)
	}
	return classify(s.String(), err)
}

// Reserves reports whether the script takes reservations: its contract
// names the modes 'reserve:<id>:<lifetime>' and 'settle:<id>' of ARGV[4]
// (token_bucket, zset_log and sliding_window from v7). Limiter.Reserve refuses a script that does not
// (ErrNotSupported).
func (s Script) Reserves() bool {
	return len(s.Argv) > 3 && strings.Contains(s.Argv[3], "'reserve:<id>:<lifetime>'") && strings.Contains(s.Argv[3], "'settle:<id>'")
}

var embedded = sync.OnceValues(loadEmbedded)

func loadEmbedded() ([]Script, error) {
	raw, err := luaFiles.ReadFile("lua/manifest.json")
	if err != nil {
		return nil, fmt.Errorf("ratelua: read manifest: %w", err)
	}
	var m manifest.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("ratelua: parse manifest: %w", err)
	}
	scripts := make([]Script, 0, len(m.Scripts))
	for _, e := range m.Scripts {
		src, err := luaFiles.ReadFile("lua/" + e.File)
		if err != nil {
			return nil, fmt.Errorf("ratelua: manifest names %s: %w", e.File, err)
		}
		if sum := manifest.SHA1(src); sum != e.SHA1 {
			return nil, fmt.Errorf("ratelua: %s has SHA1 %s, the manifest says %s", e.File, sum, e.SHA1)
		}
		scripts = append(scripts, Script{
			Name: e.Name, Version: e.Version, Source: string(src), SHA1: e.SHA1,
			Keys: e.Keys, Argv: e.Argv, Limit: e.Limit, Reply: e.Reply,
			Fresh: e.Fresh, State: e.State, Cost: e.Cost, StateVersion: e.StateVersion,
		})
	}
	return scripts, nil
}

// Scripts returns every embedded script version, ordered by name and
// version.
func Scripts() []Script {
	s, err := embedded()
	if err != nil {
		// The embedded files are checked by the package's tests; a broken
		// build answers no scripts rather than panicking.
		return nil
	}
	return slices.Clone(s)
}

// Manifest returns lua/manifest.json exactly as embedded: every script's
// name, version, file, SHA1, function and contract.
func Manifest() []byte {
	raw, err := luaFiles.ReadFile("lua/manifest.json")
	if err != nil {
		return nil
	}
	return raw
}
