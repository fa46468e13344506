package integration

import (
	"github.com/ratelua/ratelua/integration/internal/harness"

	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	ratemini "github.com/ratelua/ratelua/ratemini"
)

// miniCases are sequences played on miniredis and on each family's single
// node (through rueidis), which must give the same transcript and leave
// the same state.
var miniCases = []struct {
	name string
	ops  func() []op
}{
	{"login", loginOps},
	{"random", func() []op { return randomOps(7, 600) }},
}

// TestMiniredisDecidesAsServers: every script decides on miniredis as on
// redis-server and valkey-server, and leaves the same state.
func TestMiniredisDecidesAsServers(t *testing.T) {
	for _, kind := range harness.Families() {
		for _, mc := range miniCases {
			t.Run(string(kind)+"-"+mc.name, func(t *testing.T) {
				d := single(h.Node(t, kind))
				count(t, "miniredis", d, func(t *testing.T) {
					ops := mc.ops()
					prefix := "mini-" + mc.name
					real := adapters[0].connect(t, d, connection{})
					m := miniredis.RunT(t)
					ratemini.NewClock(m, time.Unix(1_700_000_000, 0))
					mini, err := ratemini.New(m)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(mini.Close)
					want := play(t, real, prefix, ops)
					if got := play(t, mini, prefix, ops); got != want {
						t.Fatalf("miniredis and %s differ at %s", kind, firstDifference(got, want))
					}
					miniNodes, err := mini.Nodes(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					keys := stateKeys(t, mini, prefix, ops)
					for _, k := range keys {
						w, g := state(t, d.node.Do, k), state(t, miniNodes[0].Do, k)
						if g != w {
							t.Errorf("key %s: miniredis holds %s, %s holds %s", k, g, kind, w)
						}
					}
					t.Logf("%d calls, %d state keys compared", len(ops), len(keys))
				})
			})
		}
	}
}

// state reads a key's type and contents with do: a string's value, a
// hash's fields sorted, a sorted set's members with their scores.
func state(t *testing.T, do func(ctx context.Context, args ...string) (any, error), key string) string {
	t.Helper()
	ctx := context.Background()
	typ, err := do(ctx, "TYPE", key)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	switch typ {
	case "none":
		return "none"
	case "string":
		v, err = do(ctx, "GET", key)
	case "hash":
		v, err = do(ctx, "HGETALL", key)
		if flat, ok := v.([]any); ok {
			pairs := make([]string, 0, len(flat)/2)
			for i := 0; i+1 < len(flat); i += 2 {
				pairs = append(pairs, fmt.Sprint(flat[i], "=", flat[i+1]))
			}
			slices.Sort(pairs)
			v = pairs
		}
	case "zset":
		v, err = do(ctx, "ZRANGE", key, "0", "-1", "WITHSCORES")
	default:
		t.Fatalf("%s has type %v", key, typ)
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%v %v", typ, v)
}
