package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/modeltest"
	"github.com/ratelua/ratelua/testbench"
)

// agreementCalls is how many calls TestFunctionsAgreeWithScripts makes per
// script of the newest release (older releases: a fifth).
const agreementCalls = 1500

// TestFunctionsAgreeWithScripts: on both servers, one random sequence per
// script and release goes through EVALSHA on one key and through FCALL of
// the release's library on another, with bad arguments now and then; the
// replies (error replies included) are the same byte for byte after every
// call, and so are the states (GET, HGETALL or ZRANGE WITHSCORES) and their
// TTLs (within the time between the two reads).
func TestFunctionsAgreeWithScripts(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		if _, err := ratelua.NewRegistry().Load(ctx, ratelua.Rueidis(client)); err != nil {
			t.Fatal(err)
		}
		// Every embedded release's library (one per version a script has).
		releases := map[int]bool{}
		for _, sc := range ratelua.Scripts() {
			releases[sc.Version] = true
		}
		for version := range releases {
			lib, err := ratelua.ReleaseLibrary(version)
			if err != nil {
				t.Fatal(err)
			}
			if err := client.Do(ctx, client.B().FunctionLoad().Replace().FunctionCode(lib.Source).Build()).Error(); err != nil {
				t.Fatalf("FUNCTION LOAD %s: %v", lib.Name, err)
			}
		}
		for _, sc := range ratelua.Scripts() {
			t.Run(sc.String(), func(t *testing.T) { agreeOnServer(t, ctx, client, sc, agreementCalls) })
		}
	})
}

// agreeOnServer is TestFunctionsAgreeWithScripts for one script version.
func agreeOnServer(t *testing.T, ctx context.Context, client rueidis.Client, s ratelua.Script, calls int) {
	r := rand.New(rand.NewPCG(uint64(s.Version), uint64(len(s.Name))))
	done := 0
	for seq := 0; done < calls; seq++ {
		unit := []string{"s", "ms", "us"}[seq%3]
		m, limits, longest := modeltest.Generators[s.Name](r, unit, 1+seq%4)
		tag := modeltest.RandomKey(r)
		viaScript, viaFunction := "agree:{"+tag+"}:evalsha", "agree:{"+tag+"}:fcall"
		if err := client.Do(ctx, client.B().Del().Key(viaScript, viaFunction).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		now := int64(1_700_000_000) * modeltest.Scale(unit)
		var history []string
		for i := 0; i < 200 && done < calls; i++ {
			// The model only draws the next call (concurrency's lease ids).
			c := modeltest.NextCall(r, m, now, unit, longest)
			now = c.Now
			args := modeltest.CallArgs(c, limits)
			if r.IntN(25) == 0 {
				// A bad argument (for v3; v1 and v2 take "-0" and "01"): both
				// must answer alike, and a refusal writes nothing.
				args[r.IntN(len(args))] = []string{"-0", "x", "01", "+1", "1.5"}[r.IntN(5)]
			} else {
				m.Do(c)
			}
			history = append(history, strings.Join(append(args[:4:4], args[4+len(limits):]...), " "))
			a := client.Do(ctx, client.B().Evalsha().Sha1(s.SHA1).Numkeys(1).Key(viaScript).Arg(args...).Build())
			b := client.Do(ctx, client.B().Fcall().Function(s.Function()).Numkeys(1).Key(viaFunction).Arg(args...).Build())
			done++
			fail := func(format string, v ...any) {
				t.Helper()
				t.Fatalf("%s seq %d call %d, limits %v, ARGV %q: %s\nlast calls: %s", s, seq, i, limits, args,
					fmt.Sprintf(format, v...), strings.Join(history[max(0, len(history)-10):], " | "))
			}
			if ra, rb := replyText(a), replyText(b); ra != rb {
				fail("EVALSHA replies %s, FCALL %s", ra, rb)
			}
			kindA, stateA, errA := realState(ctx, client, viaScript)
			kindB, stateB, errB := realState(ctx, client, viaFunction)
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			if kindA != kindB || !sameState(stateA, stateB) {
				fail("EVALSHA state %s %v, FCALL state %s %v", kindA, stateA, kindB, stateB)
			}
			if kindA == "none" {
				continue
			}
			pttlA, errA := client.Do(ctx, client.B().Pttl().Key(viaScript).Build()).AsInt64()
			pttlB, errB := client.Do(ctx, client.B().Pttl().Key(viaFunction).Build()).AsInt64()
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			if d := pttlA - pttlB; d < -50 || d > 50 {
				fail("EVALSHA PTTL %d, FCALL PTTL %d", pttlA, pttlB)
			}
		}
	}
}

// replyText is a reply as the server sent it: the integers, or the error
// message.
func replyText(r rueidis.RedisResult) string {
	if err := r.Error(); err != nil {
		return "error " + err.Error()
	}
	v, err := r.ToAny()
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("%v", v)
}
