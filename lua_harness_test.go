package ratelua

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ratelua/ratelua/internal/modeltest"
	"github.com/ratelua/ratelua/luatest"
)

// testKey is the state key every script test uses.
const testKey = "rl:{user:42}:test"

// source returns the embedded source of a script's latest version.
func source(t testing.TB, name string) string {
	t.Helper()
	s, err := NewRegistry().Latest(name)
	if err != nil {
		t.Fatal(err)
	}
	return s.Source
}

// allScripts is Scripts() for a test that loops over it: it fails when the
// embedded set does not load or is empty, where Scripts() answers none
// and the loop would pass having run nothing.
func allScripts(t testing.TB) []Script {
	t.Helper()
	all, err := embedded()
	if err != nil {
		t.Fatalf("the embedded scripts do not load: %v", err)
	}
	if len(all) == 0 {
		t.Fatal("no script is embedded")
	}
	return slices.Clone(all)
}

// versions returns every embedded version of a script, oldest first: the
// tests of behaviour that every version shares run on each.
func versions(t testing.TB, name string) []Script {
	t.Helper()
	var out []Script
	for _, s := range allScripts(t) {
		if s.Name == name {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no version of %s is embedded", name)
	}
	return out
}

// frozenEngine returns an engine whose clock never moves, so TTLs read back
// exactly as set and nothing expires behind a model's back.
func frozenEngine() *luatest.Engine {
	return luatest.New(luatest.Options{Now: time.Unix(1_700_000_000, 0)})
}

// run runs src on testKey and returns its reply as integers; a strictness
// violation fails the test at once.
func run(t testing.TB, e *luatest.Engine, src string, args []string) ([]int64, *luatest.Result, error) {
	t.Helper()
	return runOn(t, e, src, testKey, args)
}

// runOn is run with the state key key.
func runOn(t testing.TB, e *luatest.Engine, src, key string, args []string) ([]int64, *luatest.Result, error) {
	t.Helper()
	res, err := e.Run(src, []string{key}, args)
	var v *luatest.Violation
	if errors.As(err, &v) {
		t.Fatalf("strictness violation with ARGV %q: %v", args, err)
	}
	if err != nil {
		return nil, res, err
	}
	ints, err := luatest.Ints(res.Reply)
	if err != nil {
		t.Fatalf("reply %#v is not an array of integers: %v", res.Reply, err)
	}
	if len(ints) != 5 {
		t.Fatalf("reply %v has %d integers, want 5", ints, len(ints))
	}
	return ints, res, nil
}

// The random draws shared with the tests in integration/.
var (
	generators = modeltest.Generators
	forVersion = modeltest.ForVersion
	scale      = modeltest.Scale
	nLimits    = modeltest.NLimits
	strs       = modeltest.Strs
	randomCall = modeltest.RandomCall
	nextCall   = modeltest.NextCall
	randomKey  = modeltest.RandomKey
	callArgs   = modeltest.CallArgs
)

func ints64(xs ...int64) []int64 { return xs }

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// newestLibrary is the library of the newest release.
func newestLibrary(t testing.TB) Library {
	t.Helper()
	lib, err := ReleaseLibrary(0)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}
