package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// encodingLimits are limit sets of 1 to 4 limits per v6 script (but
// concurrency), in ms, with long numbers, so that a state that lost its
// compact form would show: sliding_window's 3-limit hash takes 160 bytes
// as a listpack and 344 as a hash table.
var encodingLimits = map[string][][]string{
	ratelua.SlidingWindow: {
		{"5", "1000", "100"},
		{"1", "5000", "1000", "5", "3600000", "600000"},
		{"1", "5000", "1000", "5", "3600000", "600000", "100", "86400000", "3600000"},
		// Four limits: "m" is longer than 64 bytes even without the
		// summary, so the hash is a hash table by design; only the memory
		// bound is checked.
		{"10", "1000", "100", "100", "60000", "1000", "1000", "3600000", "60000", "10000", "86400000", "3600000"},
	},
	ratelua.ZSetLog: {
		{"5", "1000"},
		{"1", "5000", "5", "3600000"},
		{"1", "5000", "5", "3600000", "100", "86400000"},
	},
	ratelua.TokenBucket: {
		{"5", "1", "1000"},
		{"1", "1", "5000", "5", "1", "720000"},
		{"1", "1", "5000", "5", "1", "720000", "100", "1", "864000"},
	},
	ratelua.AR1: {
		{"5", "2000", "1000"},
		{"1", "2000", "5000", "5", "2000", "3600000"},
		{"1", "2000", "5000", "5", "2000", "3600000", "100", "1100", "60000"},
	},
}

// TestV6StateStaysCompactOnServers drives every v6 script but concurrency,
// then the newest version of each (sliding_window v7's denial memo must
// keep the compact form too), with 1 to 4 limits through a random sequence that takes each of its paths
// (recording and denied calls, peeks, mode 1, steps of zero, within the
// window and past it, a clock behind), and after every call checks the
// key's OBJECT ENCODING (a hash or a sorted set of this size stays a
// listpack) and a MEMORY USAGE bound: at most 3 times its fields' and
// values' bytes plus 96 (a hash table costs about twice a listpack). Issue
// 36, row 1: sliding_window v6 without its compact step gave the same
// replies, but its 3-limit hash became a hash table.
func TestV6StateStaysCompactOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		do := func(args ...string) rueidis.RedisResult {
			return client.Do(ctx, client.B().Arbitrary(args[0]).Args(args[1:]...).Build())
		}
		for name, sets := range encodingLimits {
			for _, src := range []string{scriptV6(t, name), scriptNewest(t, name)} {
				for li, limits := range sets {
					r := rand.New(rand.NewPCG(uint64(li), 36))
					key := fmt.Sprintf("compact:{%s}:%d", name, li)
					do("DEL", key)
					now := int64(1_700_000_000_000)
					for call := range 300 {
						switch p := r.IntN(100); {
						case p < 30:
						case p < 80:
							now += r.Int64N(2000)
						case p < 92:
							now += r.Int64N(4_000_000)
						default:
							now -= r.Int64N(3000)
						}
						count := []string{"1", "1", "1", "2", "0", "5", "1000"}[r.IntN(7)]
						mode := strconv.Itoa(r.IntN(2))
						args := append([]string{count, "ms", strconv.FormatInt(now, 10), mode}, limits...)
						if err := eval(ctx, client, src, key, args...).Error(); err != nil {
							t.Fatalf("%s %v call %d: %v", name, limits, call, err)
						}
						checkCompact(t, do, name != ratelua.SlidingWindow || li < 3, key, fmt.Sprintf("%s with %d limits, call %d %v", name, len(limits), call, args[:4]))
					}
				}
			}
		}
	})
}

// checkCompact checks one key's encoding and memory (see
// TestV6StateStaysCompactOnServers).
func checkCompact(t *testing.T, do func(...string) rueidis.RedisResult, listpack bool, key, what string) {
	t.Helper()
	kind, err := do("TYPE", key).ToString()
	if err != nil {
		t.Fatal(err)
	}
	if kind == "none" {
		return
	}
	enc, err := do("OBJECT", "ENCODING", key).ToString()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := do("MEMORY", "USAGE", key, "SAMPLES", "0").AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	var raw int64
	switch kind {
	case "hash":
		m, err := do("HGETALL", key).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range m {
			raw += int64(len(f) + len(v))
		}
		if listpack && enc != "listpack" {
			t.Errorf("%s: a hash of %d fields is %s, want listpack (fields %v)", what, len(m), enc, m)
		}
	case "zset":
		n, err := do("ZCARD", key).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		members, err := do("ZRANGE", key, "0", "-1").AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			raw += int64(len(m)) + 8
		}
		if n <= 128 && enc != "listpack" {
			t.Errorf("%s: a sorted set of %d members is %s, want listpack", what, n, enc)
		}
		if n > 128 {
			return // past zset-max-listpack-entries: a skiplist by design
		}
	case "string":
		v, err := do("GET", key).ToString()
		if err != nil {
			t.Fatal(err)
		}
		raw = int64(len(v))
	default:
		t.Fatalf("%s: the key is a %s", what, kind)
	}
	if enc == "hashtable" {
		raw *= 2 // a hash table by design: twice a listpack
	}
	if mem > 3*raw+96 {
		t.Errorf("%s: MEMORY USAGE %d bytes for %d bytes of %s (%s), want at most %d", what, mem, raw, kind, enc, 3*raw+96)
	}
}
