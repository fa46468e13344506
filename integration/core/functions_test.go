package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/internal/modeltest"
	"github.com/ratelua/ratelua/testbench"
)

// agreementCalls is how many calls TestFunctionsAgreeWithScripts makes per
// script version.
const agreementCalls = 1500

// TestFunctionsAgreeWithScripts: on both servers, one random sequence per
// script and release goes through EVALSHA on one key and through FCALL of
// the release's library on another, with bad arguments now and then; the
// replies (error replies included) are the same byte for byte after every
// call, and so are the states (GET, HGETALL or ZRANGE WITHSCORES) and their
// expiry times. Both calls run in one MULTI between two TIME readings, so
// that the expiry each wrote (PEXPIRETIME) is compared exactly: FCALL's is
// EVALSHA's plus the milliseconds the server's clock moved between them,
// which is 0 unless the two TIME readings fall in different milliseconds.
// The releases are those of the embedded scripts, never a hand-kept list.
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
		if len(releases) == 0 {
			t.Fatal("no script is embedded: ratelua.Scripts() is empty")
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
	done, compared, sameMillisecond := 0, 0, 0
	settled := 0 // settles applied (v7)
	for seq := 0; done < calls; seq++ {
		unit := []string{"s", "ms", "us"}[seq%3]
		m, limits, longest := modeltest.Generators[s.Name](r, unit, 1+seq%4)
		// The version's rules: v7's calls reserve and settle too.
		m = modeltest.ForVersion(m, s.Version)
		tag := modeltest.RandomKey(r)
		viaScript, viaFunction := "agree:{"+tag+"}:evalsha", "agree:{"+tag+"}:fcall"
		if err := client.Do(ctx, client.B().Del().Key(viaScript, viaFunction).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		now := int64(1_700_000_000) * modeltest.Scale(unit)
		var history []string
		prevA, prevB := int64(-2), int64(-2) // the expiry times after the last call
		for i := 0; i < 200 && done < calls; i++ {
			// The model only draws the next call (concurrency's lease ids).
			c := modeltest.NextCall(r, m, now, unit, longest)
			now = c.Now
			args := modeltest.CallArgs(c, limits)
			if r.IntN(25) == 0 {
				// A bad argument: both must answer alike, and a refusal
				// writes nothing.
				args[r.IntN(len(args))] = []string{"-0", "x", "01", "+1", "1.5"}[r.IntN(5)]
			} else if want := m.Do(c).Ints(); c.Op == model.OpSettle && want[4] >= 1 {
				settled++
			}
			history = append(history, strings.Join(append(args[:4:4], args[4+len(limits):]...), " "))
			a, b, clock, err := bothInOneTransaction(ctx, client, s, viaScript, viaFunction, args)
			if err != nil {
				t.Fatal(err)
			}
			done++
			fail := func(format string, v ...any) {
				t.Helper()
				t.Fatalf("%s seq %d call %d, limits %v, ARGV %q: %s\nlast calls: %s", s, seq, i, limits, args,
					fmt.Sprintf(format, v...), strings.Join(history[max(0, len(history)-10):], " | "))
			}
			if a != b {
				fail("EVALSHA replies %s, FCALL %s", a, b)
			}
			kindA, stateA, errA := realState(ctx, client, viaScript)
			kindB, stateB, errB := realState(ctx, client, viaFunction)
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			if kindA != kindB || !sameState(stateA, stateB) {
				fail("EVALSHA state %s %v, FCALL state %s %v", kindA, stateA, kindB, stateB)
			}
			expA, errA := client.Do(ctx, client.B().Pexpiretime().Key(viaScript).Build()).AsInt64()
			expB, errB := client.Do(ctx, client.B().Pexpiretime().Key(viaFunction).Build()).AsInt64()
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			unchanged := expA == prevA && expB == prevB
			prevA, prevB = expA, expB
			if kindA == "none" {
				if expA != -2 || expB != -2 {
					fail("no state, PEXPIRETIME %d and %d", expA, expB)
				}
				continue
			}
			if expA < 0 || expB < 0 {
				fail("a state without an expiry: PEXPIRETIME %d (EVALSHA), %d (FCALL)", expA, expB)
			}
			if unchanged {
				// Neither call set an expiry (a Peek, a denial): the pair
				// was compared when it was written.
				continue
			}
			// Each expiry is the server's millisecond at the call plus the
			// TTL the script wrote; the calls ran in order between the TIME
			// readings, so equal TTLs mean 0 <= expB - expA <= clock.
			if d := expB - expA; d < 0 || d > clock {
				fail("EVALSHA wrote the expiry %d, FCALL %d: FCALL's TTL differs by %d ms beyond the %d ms the clock moved between them",
					expA, expB, d, clock)
			}
			compared++
			if clock == 0 {
				sameMillisecond++
			}
		}
	}
	t.Logf("%s: %d calls, %d expiry times compared, %d of them with both calls in one millisecond (exact equality)", s, done, compared, sameMillisecond)
	if sameMillisecond == 0 {
		t.Errorf("%s: no pair of calls ran in one millisecond: the expiry times were never compared exactly", s)
	}
	if s.Version >= 7 && model.Reservable[s.Name] && settled == 0 {
		t.Errorf("%s: no settle applied in %d calls: reserve and settle were not compared", s, done)
	}
}

// bothInOneTransaction runs one call by EVALSHA on viaScript and by FCALL on
// viaFunction in one MULTI, between two TIME readings. It returns both
// replies as text and how many milliseconds the server's clock moved
// between the readings.
func bothInOneTransaction(ctx context.Context, client rueidis.Client, s ratelua.Script, viaScript, viaFunction string, args []string) (a, b string, clock int64, err error) {
	results := client.DoMulti(ctx,
		client.B().Multi().Build(),
		client.B().Time().Build(),
		client.B().Evalsha().Sha1(s.SHA1).Numkeys(1).Key(viaScript).Arg(args...).Build(),
		client.B().Fcall().Function(s.Function()).Numkeys(1).Key(viaFunction).Arg(args...).Build(),
		client.B().Time().Build(),
		client.B().Exec().Build())
	exec, err := results[len(results)-1].ToArray()
	if err != nil {
		return "", "", 0, fmt.Errorf("EXEC: %w", err)
	}
	if len(exec) != 4 {
		return "", "", 0, fmt.Errorf("EXEC answered %d replies, want 4", len(exec))
	}
	before, err1 := timeMillis(exec[0])
	after, err2 := timeMillis(exec[3])
	if err := errors.Join(err1, err2); err != nil {
		return "", "", 0, err
	}
	return messageText(exec[1]), messageText(exec[2]), after - before, nil
}

// timeMillis is a TIME reply in whole milliseconds, rounded down as the
// server rounds the time it sets an expiry from.
func timeMillis(m rueidis.RedisMessage) (int64, error) {
	parts, err := m.AsStrSlice()
	if err != nil || len(parts) != 2 {
		return 0, fmt.Errorf("TIME answered %v, %v", parts, err)
	}
	sec, err1 := strconv.ParseInt(parts[0], 10, 64)
	usec, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("TIME answered %v: %w", parts, err)
	}
	return sec*1000 + usec/1000, nil
}

// messageText is a reply inside EXEC as the server sent it: the integers,
// or the error message.
func messageText(m rueidis.RedisMessage) string {
	if err := m.Error(); err != nil {
		return "error " + err.Error()
	}
	v, err := m.ToAny()
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("%v", v)
}
