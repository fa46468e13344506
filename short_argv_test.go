package ratelua

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/luatest"
)

// shortArgvFull is a valid ARGV of one limit per script: every prefix of
// it shorter than a whole call is a call with arguments missing.
var shortArgvFull = map[string][]string{
	SlidingWindow: {"1", "ms", "1000", "0", "5", "1000", "100"},
	AR1:           {"1", "ms", "1000", "0", "5", "2000", "100"},
	ZSetLog:       {"1", "ms", "1000", "0", "5", "1000"},
	TokenBucket:   {"1", "ms", "1000", "0", "5", "1", "100"},
}

// wantShortArgv is the argument each short call's error must name: the
// first one missing (ARGV[1..4]) or the count of limit arguments.
func wantShortArgv(n int) string {
	if n < 4 {
		return fmt.Sprintf("ARGV[%d]", n+1)
	}
	return "limits of"
}

// TestShortArgvIsNamed calls every v6 script (but concurrency) with each
// short ARGV, 0 to n-1 arguments of a valid call, on a key holding state:
// each answers 'ERR ratelua:' naming the first missing argument (never a
// raw Lua error), and the key is unchanged.
func TestShortArgvIsNamed(t *testing.T) {
	for name, full := range shortArgvFull {
		script, err := NewRegistry().Latest(name)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(full); n++ {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				e := frozenEngine()
				if _, err := e.Run(script.Source, []string{testKey}, full); err != nil {
					t.Fatalf("a valid call: %v", err)
				}
				before := fmt.Sprint(e.Dump(testKey))
				_, err := e.Run(script.Source, []string{testKey}, full[:n])
				var reply *luatest.ErrorReply
				if !errors.As(err, &reply) {
					t.Fatalf("%d arguments: got %v, want an error reply", n, err)
				}
				if !strings.HasPrefix(reply.Msg, "ERR ratelua: ") || !strings.Contains(reply.Msg, wantShortArgv(n)) {
					t.Errorf("%d arguments: %q, want 'ERR ratelua:' naming %s", n, reply.Msg, wantShortArgv(n))
				}
				if after := fmt.Sprint(e.Dump(testKey)); after != before {
					t.Errorf("%d arguments changed the key: %v -> %v", n, before, after)
				}
			})
		}
	}
}
