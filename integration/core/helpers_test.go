package core

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/luatest"
)

// step is one call of a hand-worked case: eventCount, now (the caller's
// clock), mode, and the reply.
type step struct {
	count int64
	now   int64
	mode  int
	want  []int64
}

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

// resultInSeconds is the Result the Go API makes of a reply in seconds:
// a retry_after of -1 is Never.
func resultInSeconds(ints []int64) ratelua.Result {
	retry := time.Duration(ints[2]) * time.Second
	if ints[2] < 0 {
		retry = ratelua.Never
	}
	return ratelua.Result{
		Allowed:    ints[0] == 1,
		Remaining:  ints[1],
		RetryAfter: retry,
		ResetAfter: time.Duration(ints[3]) * time.Second,
		Limit:      int(ints[4]) - 1,
	}
}

// noAnswer reports an error of a call that got no answer: unavailable and
// no error reply of the server.
func noAnswer(err error) bool {
	var se *ratelua.ServerError
	return errors.Is(err, ratelua.ErrUnavailable) && !errors.As(err, &se)
}

// frozenEngine returns an engine whose clock never moves.
func frozenEngine() *luatest.Engine {
	return luatest.New(luatest.Options{Now: time.Unix(1_700_000_000, 0)})
}

// source returns the embedded source of a script's newest version.
func source(t testing.TB, name string) string {
	t.Helper()
	s, err := ratelua.NewRegistry().Latest(name)
	if err != nil {
		t.Fatal(err)
	}
	return s.Source
}

// newestLibrary is the library of the newest release.
func newestLibrary(t testing.TB) ratelua.Library {
	t.Helper()
	lib, err := ratelua.ReleaseLibrary(0)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// repoRoot is the repository's root, from this package's folder.
var repoRoot = filepath.Join("..", "..")
