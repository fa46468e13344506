package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// v6Valid is a valid ARGV of one limit for each v6 script but
// concurrency: every prefix shorter than it lacks an argument.
var v6Valid = map[string][]string{
	ratelua.SlidingWindow: {"1", "ms", "1000", "0", "5", "1000", "100"},
	ratelua.AR1:           {"1", "ms", "1000", "0", "5", "2000", "100"},
	ratelua.ZSetLog:       {"1", "ms", "1000", "0", "5", "1000"},
	ratelua.TokenBucket:   {"1", "ms", "1000", "0", "5", "1", "100"},
}

// eval runs src by EVAL on one key and returns the server's answer.
func eval(ctx context.Context, client rueidis.Client, src, key string, args ...string) rueidis.RedisResult {
	cmd := append([]string{src, "1", key}, args...)
	return client.Do(ctx, client.B().Arbitrary("EVAL").Args(cmd...).Build())
}

// dump is the key's DUMP (its type, value and encoding, byte for byte),
// or "" when it does not exist.
func dump(ctx context.Context, t *testing.T, client rueidis.Client, key string) string {
	t.Helper()
	v, err := client.Do(ctx, client.B().Dump().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return ""
	}
	if err != nil {
		t.Fatalf("DUMP %s: %v", key, err)
	}
	return v
}

// TestV6ShortArgvNamedOnServers: every v6 script but concurrency, called
// by EVAL with each short ARGV (0 to n-1 arguments of a valid call) on a
// key holding its state, answers 'ERR ratelua:' naming the first missing
// argument (never a raw Lua error such as token_bucket's "bad argument #1
// to 'find'"), and leaves the key byte-identical.
func TestV6ShortArgvNamedOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		for name, full := range v6Valid {
			src := scriptV6(t, name)
			key := "shortargv:{" + name + "}"
			if err := eval(ctx, client, src, key, full...).Error(); err != nil {
				t.Fatalf("%s, a valid call: %v", name, err)
			}
			before := dump(ctx, t, client, key)
			for n := 0; n < len(full); n++ {
				err := eval(ctx, client, src, key, full[:n]...).Error()
				want := "limits of"
				if n < 4 {
					want = fmt.Sprintf("ARGV[%d]", n+1)
				}
				if err == nil || !isRateluaError(err) || !strings.Contains(err.Error(), want) {
					t.Errorf("%s with %d arguments: %v, want 'ERR ratelua:' naming %s", name, n, err, want)
				}
				if after := dump(ctx, t, client, key); after != before {
					t.Errorf("%s with %d arguments changed the key", name, n)
				}
			}
		}
	})
}

// scriptV6 is the source of version 6 of a script.
func scriptV6(t testing.TB, name string) string {
	t.Helper()
	s, err := ratelua.NewRegistry().Lookup(name, 6)
	if err != nil {
		t.Fatal(err)
	}
	return s.Source
}

// scriptNewest is the source of the newest embedded version of script
// name (the Go API's default).
func scriptNewest(t testing.TB, name string) string {
	t.Helper()
	s, err := ratelua.NewRegistry().Latest(name)
	if err != nil {
		t.Fatal(err)
	}
	return s.Source
}

// isRateluaError reports whether err is a script's own refusal, the error
// reply "ERR ratelua: ..." (rueidis shows it without the "ERR "), not a
// raw Lua error.
func isRateluaError(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "ratelua: ") || strings.HasPrefix(err.Error(), "ERR ratelua: ")
}
