package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/internal/modeltest"
	"github.com/ratelua/ratelua/luatest"
	"github.com/ratelua/ratelua/testbench"
)

// realState reads a key's type and contents from a server in the shapes
// luatest's Dump uses.
func realState(ctx context.Context, client rueidis.Client, key string) (string, any, error) {
	kind, err := client.Do(ctx, client.B().Type().Key(key).Build()).ToString()
	if err != nil {
		return "", nil, err
	}
	switch kind {
	case "none":
		return kind, nil, nil
	case "string":
		v, err := client.Do(ctx, client.B().Get().Key(key).Build()).ToString()
		return kind, v, err
	case "hash":
		v, err := client.Do(ctx, client.B().Hgetall().Key(key).Build()).AsStrMap()
		return kind, v, err
	case "zset":
		v, err := client.Do(ctx, client.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
		if err != nil {
			return kind, nil, err
		}
		members := make([]luatest.ZMember, len(v))
		for i, z := range v {
			members[i] = luatest.ZMember{Member: z.Member, Score: z.Score}
		}
		return kind, members, nil
	}
	return kind, nil, fmt.Errorf("unexpected type %q", kind)
}

// differential replays one long random call sequence per script through
// luatest and through a real server (single node or cluster), comparing
// every reply, the state's type and contents, and its TTL.
func differential(t *testing.T, ctx context.Context, client rueidis.Client, family string, calls int) {
	for _, name := range []string{ratelua.SlidingWindow, ratelua.AR1, ratelua.ZSetLog, ratelua.TokenBucket, ratelua.Concurrency} {
		src := source(t, name)
		sha := luaSHA(t, name)
		r := rand.New(rand.NewPCG(uint64(len(name)), uint64(len(family))))
		done := 0
		// applied counts the settles applied and the reserves admitted
		// (v7): the sequences must exercise both on the servers.
		applied := map[string]int{}
		for seq := 0; done < calls; seq++ {
			unit, nLimits := []string{"s", "ms", "us"}[seq%3], 1+seq%4
			// One sequence in six drives the common call (one limit, count
			// 1, mode '0', unit ms) four times in five, which the v7
			// scripts decide first by a shorter path (issue 35).
			common := name != ratelua.Concurrency && seq%6 == 5
			if common {
				unit, nLimits = "ms", 1
			}
			m, limits, longest := modeltest.Generators[name](r, unit, nLimits)
			if latest, err := ratelua.NewRegistry().Latest(name); err == nil {
				m = modeltest.ForVersion(m, latest.Version)
			}
			// The engine's TIME is the server's (near enough): a caller far
			// behind a state reads it (v6's stale rule), and the calls here
			// stay years behind it, so both find no state stale.
			e := luatest.New(luatest.Options{Now: time.Now()})
			key := fmt.Sprintf("diff:{%s-%s-%d}:%s", family, name, seq, name)
			if err := client.Do(ctx, client.B().Del().Key(key).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			now := int64(1_700_000_000) * modeltest.Scale(unit)
			if name == ratelua.Concurrency {
				// Behind both clocks, luatest's frozen TIME and the server's:
				// v6 compares a caller's now far from the state with TIME.
				now = int64(1_600_000_000) * modeltest.Scale(unit)
			}
			var history []string
			for i := 0; i < 300 && done < calls; i++ {
				c := modeltest.NextCall(r, m, now, unit, longest)
				if common && r.IntN(5) > 0 {
					c = model.Call{Count: 1, Now: c.Now, Unit: unit}
					if c.Now < now {
						c.Now = now + r.Int64N(longest/4+1) // mostly a clock that never goes back
					}
				}
				c.Server = time.Now().Unix() * modeltest.Scale(unit) // the server's TIME, near enough: the clocks here stay years behind it
				now = c.Now
				args := modeltest.CallArgs(c, limits)
				want := m.Do(c).Ints()
				if c.Op == model.OpSettle && want[4] >= 1 || c.Op == model.OpReserve && want[0] == 1 {
					applied[c.Op]++
				}
				history = append(history, strings.Join(append(args[:4:4], args[4+len(limits):]...), " "))
				res, lerr := e.Run(src, []string{key}, args)
				real, rerr := client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(1).Key(key).Arg(args...).Build()).ToAny()
				done++
				fail := func(format string, a ...any) {
					t.Helper()
					t.Fatalf("%s on %s, seq %d call %d, limits %v: %s\nlast calls: %s", name, family, seq, i, limits,
						fmt.Sprintf(format, a...), strings.Join(history[max(0, len(history)-10):], " | "))
				}
				if (lerr != nil) != (rerr != nil) {
					fail("luatest error %v, server error %v", lerr, rerr)
				}
				if lerr == nil && fmt.Sprint(res.Reply) != fmt.Sprint(real) {
					fail("luatest reply %v, server reply %v", res.Reply, real)
				}
				if lerr == nil && fmt.Sprint(res.Reply) != fmt.Sprint(want) {
					fail("luatest reply %v, model %v", res.Reply, want)
				}
				kind, state, err := realState(ctx, client, key)
				if err != nil {
					t.Fatal(err)
				}
				if kind != e.Type(key) || !sameState(e.Dump(key), state) {
					fail("luatest state %s %v, server state %s %v", e.Type(key), e.Dump(key), kind, state)
				}
				if kind == "none" {
					continue
				}
				pttl, err := client.Do(ctx, client.B().Pttl().Key(key).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				if want := e.PTTL(key); pttl > want || pttl < want-2000 {
					fail("luatest PTTL %d, server PTTL %d", want, pttl)
				}
				// Keep both copies alive whatever the real clock does; the
				// next write sets both TTLs again.
				e.Do("PEXPIRE", key, "3600000")
				client.Do(ctx, client.B().Pexpire().Key(key).Milliseconds(3600000).Build())
			}
		}
		if model.Reservable[name] && (applied[model.OpSettle] == 0 || applied[model.OpReserve] == 0) {
			t.Errorf("%s on %s: %d settles applied and %d reserves admitted in %d calls: the sequences do not exercise them",
				name, family, applied[model.OpSettle], applied[model.OpReserve], done)
		}
	}
}

// sameState compares luatest's Dump with a server's contents.
func sameState(lua, real any) bool {
	switch l := lua.(type) {
	case nil:
		return real == nil
	case []luatest.ZMember:
		r, _ := real.([]luatest.ZMember)
		sort.Slice(r, func(i, j int) bool {
			if r[i].Score != r[j].Score {
				return r[i].Score < r[j].Score
			}
			return r[i].Member < r[j].Member
		})
		return reflect.DeepEqual(l, r) || (len(l) == 0 && len(r) == 0)
	}
	return reflect.DeepEqual(lua, real)
}

func luaSHA(t *testing.T, name string) string {
	t.Helper()
	s, err := ratelua.NewRegistry().Latest(name)
	if err != nil {
		t.Fatal(err)
	}
	return s.SHA1
}

// TestDifferentialSingleNode: luatest and the real servers agree on every
// reply and every state of long random sequences.
func TestDifferentialSingleNode(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		if _, err := ratelua.NewRegistry().Load(ctx, ratelua.Rueidis(client)); err != nil {
			t.Fatal(err)
		}
		differential(t, ctx, client, string(s.Kind)+"-single", 3000)
	})
}
