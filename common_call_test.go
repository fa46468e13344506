package ratelua

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/luatest"
)

// TestCommonCallAgreesWithModels drives token_bucket, ar1 and zset_log
// at their newest versions with sequences of mostly the common call, the
// one their scripts decide first by a shorter path (one limit, count 1,
// mode '0', unit ms; issue 35), against the models: replies, existence and
// PTTL after every call. The limits are drawn where that path meets each
// state it reads and writes: token_bucket's refill amounts reach 10^6 per
// interval (X past 2^53, the text state), ar1's counts cross boundaries
// (a fraction, the text state), zset_log's max is small enough for sets
// of max events and more (its denials, read by rank, and its trims), and
// one call in four of a sequence still before the engine's clock is on the
// server clock (ARGV[3] empty) at that instant. The rest of the calls are
// drawn as in TestScriptsAgreeWithModels, so the common path hands keys to
// the general one and back; no call sends a command twice.
func TestCommonCallAgreesWithModels(t *testing.T) {
	engineMs := frozenEngine().Now().UnixMilli()
	limits := map[string]func(r *rand.Rand) (model.Model, []string, int64){
		TokenBucket: func(r *rand.Rand) (model.Model, []string, int64) {
			l := model.TokenBucketLimit{
				Capacity:       1 + r.Int64N(20),
				RefillAmount:   (1 + r.Int64N(5)) * []int64{1, 1000, 1_000_000}[r.IntN(3)],
				RefillInterval: 1 + r.Int64N(10_000),
			}
			m := &model.TokenBucket{BehindCounts: true, Limits: []model.TokenBucketLimit{l}}
			return m, strs(l.Capacity, l.RefillAmount, l.RefillInterval), max(1, l.RefillInterval*l.Capacity/l.RefillAmount)
		},
		AR1: func(r *rand.Rand) (model.Model, []string, int64) {
			return generators[AR1](r, "ms", 1)
		},
		ZSetLog: func(r *rand.Rand) (model.Model, []string, int64) {
			return generators[ZSetLog](r, "ms", 1)
		},
	}
	for _, name := range []string{TokenBucket, AR1, ZSetLog} {
		t.Run(name, func(t *testing.T) {
			script, err := NewRegistry().Latest(name)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(35, uint64(len(name))))
			common, server, text, denied := 0, 0, 0, 0
			for seq := range 300 {
				m, args, longest := limits[name](r)
				m = forVersion(m, script.Version)
				e := frozenEngine()
				key := randomKey(r)
				now := engineMs - r.Int64N(3*longest+1)
				var history []string
				for i := range 60 {
					c := randomCall(r, now, "ms", longest)
					if r.IntN(5) > 0 {
						c.Count, c.Mode = 1, 0
						if c.Now < now {
							c.Now = now + r.Int64N(longest/4+1) // mostly a clock that never goes back
						}
					}
					onServer := c.Count == 1 && c.Mode == 0 && c.Now <= engineMs && r.IntN(4) == 0
					if onServer {
						c.Now = engineMs
					}
					now = c.Now
					callArgs := callArgs(c, args)
					if onServer {
						callArgs[2] = ""
						server++
					}
					if c.Count == 1 && c.Mode == 0 {
						common++
					}
					want := m.Do(c).Ints()
					got, res, err := runOn(t, e, script.Source, key, callArgs)
					history = append(history, fmt.Sprintf("%q -> %v", callArgs[:4], want))
					if err != nil {
						t.Fatalf("seq %d call %d: %v\nlimit %v\nlast calls:\n%s", seq, i, err, args, strings.Join(history, "\n"))
					}
					if !equalInts(got, want) {
						t.Fatalf("seq %d call %d: reply %v, model %v\nlimit %v, state %v\nlast calls:\n%s",
							seq, i, got, want, args, e.Dump(key), strings.Join(history, "\n"))
					}
					if twice := sentTwice(res); twice != "" {
						t.Fatalf("seq %d call %d: %s sent twice (the common path hands on what it read)\nlimit %v\nlast calls:\n%s",
							seq, i, twice, args, strings.Join(history, "\n"))
					}
					exists := e.Type(key) != "none"
					if exists != m.Exists() {
						t.Fatalf("seq %d call %d: key exists %v, model says %v\nlimit %v\nlast calls:\n%s",
							seq, i, exists, m.Exists(), args, strings.Join(history, "\n"))
					}
					if state, ok := e.Dump(key).(string); ok && c.Count == 1 && c.Mode == 0 && strings.ContainsAny(state, " :") {
						text++
					}
					if c.Count == 1 && c.Mode == 0 && want[0] == 0 {
						denied++
					}
					if exists {
						if pttl := e.PTTL(key); pttl != m.TTLMillis() {
							t.Fatalf("seq %d call %d: PTTL %d, model %d\nlimit %v\nlast calls:\n%s",
								seq, i, pttl, m.TTLMillis(), args, strings.Join(history, "\n"))
						}
					}
				}
			}
			// The draws must reach what the test is for.
			// (zset_log has no text state; its common calls denied read
			// their set by rank.)
			if common < 10_000 || server < 200 || denied < 500 || name != ZSetLog && text < 500 {
				t.Errorf("%d common calls, %d on the server clock, %d denied, %d leaving the text state: the sequences do not exercise the common path",
					common, server, denied, text)
			}
			t.Logf("%s: %d common calls, %d on the server clock, %d denied, %d leaving the text state", script, common, server, denied, text)
		})
	}
}

// sentTwice names a command a call sent twice with the same arguments, or
// is "" when it sent none twice.
func sentTwice(res *luatest.Result) string {
	seen := map[string]bool{}
	for _, c := range res.Trace {
		k := fmt.Sprintf("%s %q", c.Name, c.Args)
		if seen[k] {
			return k
		}
		seen[k] = true
	}
	return ""
}

// TestCommonCallReadsStatesAsV6: ar1's and token_bucket's newest versions
// read v6's state (issue 35), and their common calls read it by
// arithmetic only where a pattern or tonumber makes that safe, handing
// anything else on to the general path. Each state below, written by hand,
// is read by the common call (count 1, mode '0', one limit) of the newest
// version and of v6, with a limit that admits and one that denies: the
// replies (or errors), the states left and their PTTLs must be v6's. For
// ar1: "<boundary>:<count>" at now's boundary, one before it, five before
// it and one after it (a clock behind), with counts no ratelua script
// writes among them (below 1, counted as 0; an exponent, leading zeros,
// signs, not a number), and one-integer states (one whose count is 0).
// For token_bucket: the number now * refill + deficit and the text
// "<t> <deficit>" around an empty bucket, a full one and twice full (a
// clock behind), and text of other shapes.
func TestCommonCallReadsStatesAsV6(t *testing.T) {
	now := frozenEngine().Now().UnixMilli()
	cases := map[string]struct {
		limits [][]string
		states []string
	}{}
	{
		const resolution = 60_000
		here := now / resolution
		counts := []string{"0", "0.5", "0.9990", "1", "1.", "1.5", "2", "99", "100", "150.25", "007", "5e1", "1e+17",
			"-1", "+3", " 3", "abc", "1:2", "", "inf", "0x10"}
		var states []string
		for _, b := range []int64{here, here - 1, here - 5, here + 1} {
			for _, c := range counts {
				states = append(states, fmt.Sprintf("%d:%s", b, c))
			}
			states = append(states, strconv.FormatInt(b<<20, 10), strconv.FormatInt(b<<20+7, 10), strconv.FormatInt(b<<20+100, 10))
		}
		cases[AR1] = struct {
			limits [][]string
			states []string
		}{
			limits: [][]string{{"2", "2000", strconv.Itoa(resolution)}, {"100", "2000", strconv.Itoa(resolution)}},
			states: append(states, "x", "12", "0", "-5"),
		}
	}
	{
		// 5 tokens, one per second: full = 5000 deficit units.
		var states []string
		for _, d := range []int64{-3000, 0, 1, 999, 1000, 4000, 4001, 5000, 9999, 10000, 10001, 20000} {
			states = append(states, strconv.FormatInt(now+d, 10))
			for _, at := range []int64{now, now - 2500, now + 1000} {
				states = append(states, fmt.Sprintf("%d %d", at, max(d, 0)))
			}
		}
		cases[TokenBucket] = struct {
			limits [][]string
			states []string
		}{
			limits: [][]string{{"5", "1", "1000"}, {"1", "1", "1000"}},
			states: append(states, "x", "12 x", " 5", "5 ", "1e3", "007", "-5", fmt.Sprintf("%d  5", now), fmt.Sprintf("%d 5 5", now)),
		}
	}
	for _, name := range []string{AR1, TokenBucket} {
		t.Run(name, func(t *testing.T) {
			newest, err := NewRegistry().Latest(name)
			if err != nil {
				t.Fatal(err)
			}
			v6, err := NewRegistry().Lookup(name, 6)
			if err != nil {
				t.Fatal(err)
			}
			if newest.Version == v6.Version {
				t.Skipf("no %s version after v6", name)
			}
			c := cases[name]
			read, calls := 0, 0
			for _, state := range c.states {
				for _, limit := range c.limits {
					args := append([]string{"1", "ms", strconv.FormatInt(now, 10), "0"}, limit...)
					var replies [2]string
					for i, s := range []Script{newest, v6} {
						e := frozenEngine()
						if _, err := e.Do("SET", testKey, state, "PX", "1000000"); err != nil {
							t.Fatal(err)
						}
						got, _, err := run(t, e, s.Source, args)
						replies[i] = fmt.Sprintf("reply %v, error %v, state %q, PTTL %d", got, err, e.Dump(testKey), e.PTTL(testKey))
					}
					if replies[0] != replies[1] {
						t.Errorf("state %q, limit %v: %s %s, v6 %s", state, limit, newest, replies[0], replies[1])
					}
					calls++
					if strings.Contains(replies[1], "error <nil>") {
						read++
					}
				}
			}
			if read < calls/2 {
				t.Errorf("only %d of %d calls read their state without an error: the states do not exercise the read", read, calls)
			}
		})
	}
}
