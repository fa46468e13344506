package integration

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

// reserveLimits are token_bucket configurations of the reserve/settle
// conformance: one limit (the state is one integer) and two (a line with
// the limits), so both layouts and their hash with reservations are
// written by every language.
var reserveLimits = []sharedLimit{
	{"token_bucket", []map[string]any{{"capacity": 6, "refill_amount": 1, "refill_interval_us": 4_000_000}}, 6},
	{"token_bucket", []map[string]any{{"capacity": 6, "refill_amount": 1, "refill_interval_us": 4_000_000}, {"capacity": 15, "refill_amount": 2, "refill_interval_us": 30_000_000}}, 6},
}

// The caller's clock of the conformance moves by at least reserveMinStep
// between calls: more than a call takes on a busy machine, so that no key
// expires (its TTL runs on the server's clock) before the caller's clock
// says it is fresh, which would tell the run from its replay.
const reserveMinStep = 3 * time.Second

// langStep is one call of the reserve/settle conformance.
type langStep struct {
	who      string // go, python or node
	op       string // allow, reserve or settle
	n        int64  // allow: events (0: a peek); reserve: the estimate; settle: the actual cost
	id       int64  // reserve: the id drawn (by the package, or Go's rand); settle: the id settled
	lifetime int64  // reserve: µs
	at       time.Time
}

// rawReserveCall calls the script as the wire contract says, with the ARGV
// of l's plain call and the mode of the step (Go's raw calls: the script
// itself), and returns the reply as the workers report it, and applied for
// a settle (limit_index > 0).
func rawReserveCall(ctx context.Context, client ratelua.Client, l *ratelua.Limiter, eventKey string, s langStep) (reply, bool, error) {
	args := l.Args(s.n)
	unitUS := map[string]int64{"s": 1_000_000, "ms": 1000, "us": 1}[args[1]]
	switch s.op {
	case "reserve":
		args[3] = "reserve:" + strconv.FormatInt(s.id, 10) + ":" + strconv.FormatInt((s.lifetime+unitUS-1)/unitUS, 10)
	case "settle":
		args[3] = "settle:" + strconv.FormatInt(s.id, 10)
	}
	v := make([]int64, 5)
	if err := l.Script().Run(ctx, client, l.Key(eventKey), args, v); err != nil {
		return reply{}, false, err
	}
	us := func(x int64) int64 {
		if x < 0 {
			return -1
		}
		return x * unitUS
	}
	return reply{v[0] == 1, v[1], us(v[2]), us(v[3]), int(v[4]) - 1}, v[4] != 0, nil
}

// stepReply is a worker's answer to a reserve or settle.
type stepReply struct {
	reply
	ID      int64 `json:"id"`
	Applied bool  `json:"applied"`
}

// TestLangReserveSettle has Go (raw calls of the script), Python and Node
// interleave reserves, settles, cancels, retried settles and plain calls on
// one token_bucket key, on single nodes and clusters of both families: a
// reservation is settled by any language (one reserved in Python may be
// settled in Node), with the package's own ids. Every reply equals the one
// Go's raw calls alone get replaying the same calls on a fresh key, and
// after every call the DUMP of the state is the same byte for byte,
// whichever language wrote it.
func TestLangReserveSettle(t *testing.T) {
	needTools(t, pythonTools, nodeTools)
	for _, top := range langTargets(t) {
		t.Run(top.name, func(t *testing.T) {
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: top.addrs, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			py, js := startWorkers(t, top.kind, top.topology, top.addrs)
			ctx := context.Background()
			r := rand.New(rand.NewPCG(31, uint64(len(top.name))))
			for i, s := range reserveLimits {
				t.Run(fmt.Sprintf("%d-limits", len(s.limits)), func(t *testing.T) {
					// A key of this run only: the servers may outlive a run.
					run := fmt.Sprintf("%x-%d", r.Uint64(), time.Now().UnixNano())
					eventKey := "llm{" + run + "}%é\x00" + strconv.Itoa(i)
					keyHex := hex.EncodeToString([]byte(eventKey))
					var now time.Time
					opts := ratelua.Options{Prefix: "langres", Clock: func() time.Time { return now }}
					shared, err := s.build(ratelua.Rueidis(client), opts)
					if err != nil {
						t.Fatal(err)
					}
					if shared.Script().Name != "token_bucket" || shared.Script().Version < 7 {
						t.Fatalf("the conformance needs token_bucket v7 or later, the default is %s", shared.Script())
					}
					dump := func(l *ratelua.Limiter) string {
						b, err := client.Do(ctx, client.B().Dump().Key(l.Key(eventKey)).Build()).AsBytes()
						if rueidis.IsRedisNil(err) {
							return "(none)"
						}
						if err != nil {
							t.Fatal(err)
						}
						return hex.EncodeToString(b)
					}
					workers := map[string]*worker{"python": py, "node": js}
					var steps []langStep
					var got []reply
					var dumps []string
					open := map[int64]string{} // reservation id -> the language that reserved it
					var settledIDs []int64
					counts := map[string]int{}
					at := time.UnixMicro(1_800_000_000_000_000 + r.Int64N(1e12))
					for i := range 160 {
						at = at.Add(reserveMinStep + time.Duration(r.IntN(5_000_000))*time.Microsecond)
						st := langStep{who: []string{"go", "python", "node"}[r.IntN(3)], at: at}
						k := r.IntN(10)
						if i%20 == 19 { // a settle retried, by each language in turn
							k, st.who = 9, []string{"go", "python", "node"}[i/20%3]
						}
						switch {
						case k < 3:
							st.op, st.n = "allow", []int64{0, 1, 1, 2}[r.IntN(4)]
						case k < 6 || len(open) == 0:
							st.op, st.n = "reserve", 1+r.Int64N(5)
							st.lifetime = []int64{6_000_000, 20_000_000, 200_000_000}[r.IntN(3)]
						case k < 9:
							st.op = "settle"
							for id := range open { // any open reservation
								st.id = id
								break
							}
							st.n = []int64{0, r.Int64N(4), r.Int64N(9)}[r.IntN(3)] // a cancel, a refund, an overrun
						default:
							st.op = "settle"
							if len(settledIDs) > 0 { // a settle retried
								st.id = settledIDs[r.IntN(len(settledIDs))]
							} else {
								st.id = 1 + r.Int64N(1<<52) // an id never held
							}
							st.n = r.Int64N(4)
						}
						var rep reply
						if st.who == "go" {
							if st.op == "reserve" {
								st.id = 1 + r.Int64N(1<<52)
							}
							now = at
							var err error
							rep, _, err = rawReserveCall(ctx, ratelua.Rueidis(client), shared, eventKey, st)
							if err != nil {
								t.Fatalf("go %s: %v", st.op, err)
							}
						} else {
							cmd := map[string]any{"op": st.op, "script": s.script, "limits": s.limits, "prefix": "langres",
								"key_hex": keyHex, "now_us": at.UnixMicro()}
							switch st.op {
							case "allow":
								cmd["op"], cmd["n"] = "call", st.n
							case "reserve":
								cmd["estimate"], cmd["lifetime_us"] = st.n, st.lifetime
							case "settle":
								cmd["id"], cmd["actual"] = st.id, st.n
							}
							var out stepReply
							workers[st.who].do(t, cmd, &out)
							rep = out.reply
							if st.op == "reserve" {
								if out.ID < 1 || out.ID > 1<<52 {
									t.Fatalf("%s drew reservation id %d, outside [1, 2^52]", st.who, out.ID)
								}
								st.id = out.ID
							}
						}
						switch {
						case st.op == "reserve" && rep.Allowed:
							open[st.id] = st.who
						case st.op == "settle" && open[st.id] != "":
							if open[st.id] != st.who {
								counts["settled by another language"]++
							}
							counts[st.who+" settled"]++
							delete(open, st.id)
							settledIDs = append(settledIDs, st.id)
						}
						counts[st.who+" "+st.op]++
						steps = append(steps, st)
						got = append(got, rep)
						dumps = append(dumps, dump(shared))
					}
					// Go's raw calls alone, the same calls on a fresh key.
					alone, err := s.build(ratelua.Rueidis(client), ratelua.Options{Prefix: "langresalone", Clock: func() time.Time { return now }})
					if err != nil {
						t.Fatal(err)
					}
					applied := 0
					for i, st := range steps {
						now = st.at
						want, ok, err := rawReserveCall(ctx, ratelua.Rueidis(client), alone, eventKey, st)
						if err != nil {
							t.Fatalf("alone, call %d: %v", i, err)
						}
						if got[i] != want {
							t.Fatalf("call %d by %s (%s n=%d id=%d at %d µs): got %+v, Go's raw calls alone get %+v", i, st.who, st.op, st.n, st.id, st.at.UnixMicro(), got[i], want)
						}
						if d := dump(alone); dumps[i] != d {
							t.Fatalf("after call %d by %s (%s n=%d id=%d): the state's DUMP is\n%s\nwritten alone by Go it is\n%s", i, st.who, st.op, st.n, st.id, dumps[i], d)
						}
						if st.op == "settle" && ok {
							applied++
						}
					}
					for _, c := range []string{"go reserve", "python reserve", "node reserve", "go settled", "python settled", "node settled", "settled by another language"} {
						if counts[c] == 0 {
							t.Errorf("no %q in the run: %v", c, counts)
						}
					}
					if applied == 0 || applied == counts["go settle"]+counts["python settle"]+counts["node settle"] {
						t.Errorf("%d of the settles applied: the run needs both kinds (%v)", applied, counts)
					}
					t.Logf("%v; %d settles applied", counts, applied)
				})
			}
		})
	}
}

// TestLangReserveSuites runs the Python and Node tests of reserve, then
// settle (the limiters and the ASGI and Express middlewares) on every
// server; the planted bugs py-* and node-* of mutants/ on reserve and
// settle name it.
func TestLangReserveSuites(t *testing.T) {
	env := append(langEnv(t), "CI=true")
	t.Run("python", func(t *testing.T) {
		needTools(t, pythonTools)
		out := run(t, filepath.Join(repo, "python"), env, python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "tests/test_reserve.py", "tests/test_asgi_reserve.py")
		if strings.Contains(out, "skipped") {
			t.Errorf("pytest skipped tests with every server given:\n%s", lastLines([]byte(out), 10))
		}
	})
	t.Run("node", func(t *testing.T) {
		needTools(t, nodeTools)
		out := run(t, filepath.Join(repo, "node"), env, "node", "--test", "test/reserve.test.js", "test/express-reserve.test.js")
		if !strings.Contains(out, "# skipped 0") || !strings.Contains(out, "# fail 0") {
			t.Errorf("node --test skipped or failed tests with every server given:\n%s", lastLines([]byte(out), 10))
		}
	})
}
