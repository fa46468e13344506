package ratelua

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/ratelua/ratelua/internal/model"
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

// versions returns every embedded version of a script, oldest first: the
// tests of behaviour that every version shares run on each.
func versions(name string) []Script {
	var out []Script
	for _, s := range Scripts() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// frozenEngine returns an engine whose clock never moves, so TTLs read back
// exactly as set and nothing expires behind a model's back.
func frozenEngine() *luatest.Engine {
	return luatest.New(luatest.Options{Now: time.Unix(1_700_000_000, 0)})
}

// callArgs builds ARGV for one call.
func callArgs(c model.Call, limits []string) []string {
	args := []string{strconv.FormatInt(c.Count, 10), c.Unit, strconv.FormatInt(c.Now, 10), strconv.Itoa(c.Mode)}
	return append(args, limits...)
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

func ints64(xs ...int64) []int64 { return xs }

// keyBytes are the bytes random state keys are drawn from: the hash tag's
// braces, the escape character of the Go API's tags, NUL, control and
// non-ASCII bytes, besides plain ones.
var keyBytes = []byte("ab:{}%\x00\x1b\n \xc3\xa9\xff09")

// randomKey draws a state key of 0 to a few hundred bytes, so that a script
// that behaves differently on long or odd keys is caught.
func randomKey(r *rand.Rand) string {
	var n int
	switch p := r.IntN(10); {
	case p == 0:
		n = 0
	case p < 5:
		n = 1 + r.IntN(40)
	default:
		n = 41 + r.IntN(300)
	}
	key := make([]byte, n)
	for i := range key {
		key[i] = keyBytes[r.IntN(len(keyBytes))]
	}
	return string(key)
}

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
