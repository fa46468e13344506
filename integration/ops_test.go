package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/login"
)

// op is one call of a sequence: at a time (ms since 1_700_000_000 s), on
// one limiter (a script, counting denied attempts or not), what to do.
type op struct {
	at          int64
	script      string
	countDenied bool
	kind        string // "allow", "peek", "reset", "batch", "resetmany"
	keys        []string
	n           int64
}

func (o op) String() string {
	return fmt.Sprintf("+%dms %s denied=%v %s %v n=%d", o.at, o.script, o.countDenied, o.kind, o.keys, o.n)
}

// loginOps is the worked login case of the README as a sequence: for every
// script, attempts at 1000, 1002 (denied), a peek at 1004, 1005, and a
// reset at 1006 s and a fresh attempt, counting only admitted attempts.
func loginOps() []op {
	var ops []op
	for i, s := range login.Scripts() {
		base := int64(i) * 10_000
		for _, st := range []struct {
			at   int64
			kind string
		}{{0, "allow"}, {2, "allow"}, {4, "peek"}, {5, "allow"}, {6, "reset"}, {7, "allow"}} {
			ops = append(ops, op{at: base + st.at*1000, script: s, kind: st.kind, keys: []string{"203.0.113.7"}, n: 1})
		}
	}
	return ops
}

// randomOps is a random sequence of n calls over few event keys, the
// clock moving on by 0 to 3 s between calls. Every limiter's state lives
// at least an hour, so the real servers' own clocks, which run on while
// the caller's clock jumps, never expire a key the caller's clock keeps.
func randomOps(seed uint64, n int) []op {
	r := rand.New(rand.NewPCG(seed, 42))
	keys := []string{"alice", "bob", "{carol}", "203.0.113.7", "%dave%"}
	pick := func(k int) []string {
		out := make([]string, k)
		for i := range out {
			out[i] = keys[r.IntN(len(keys))]
		}
		return out
	}
	var ops []op
	at := int64(0)
	for range n {
		at += r.Int64N(3001)
		o := op{at: at, script: login.Scripts()[r.IntN(len(login.Scripts()))], countDenied: r.IntN(3) == 0, n: 1}
		switch x := r.IntN(20); {
		case x < 11:
			o.kind, o.keys = "allow", pick(1)
			if r.IntN(4) == 0 {
				o.n = 1 + r.Int64N(6) // sometimes more than a limit's max: never
			}
		case x < 14:
			o.kind, o.keys = "peek", pick(1)
		case x < 15:
			o.kind, o.keys = "reset", pick(1)
		case x < 19:
			o.kind, o.keys = "batch", pick(1+r.IntN(4))
		default:
			o.kind, o.keys = "resetmany", pick(1+r.IntN(2))
		}
		ops = append(ops, o)
	}
	return ops
}

// play sends ops through client under prefix and returns the transcript:
// one line per call with its Results and errors.
func play(t *testing.T, client ratelua.Client, prefix string, ops []op) string {
	t.Helper()
	var now time.Time
	clock := func() time.Time { return now }
	limiters := map[bool]map[string]*ratelua.Limiter{
		false: login.Limiters(t, client, ratelua.Options{Prefix: prefix, Clock: clock}),
		true:  login.Limiters(t, client, ratelua.Options{Prefix: prefix + "-denied", Clock: clock, CountDenied: true}),
	}
	ctx := context.Background()
	var b strings.Builder
	for i, o := range ops {
		now = time.Unix(1_700_000_000, 0).Add(time.Duration(o.at) * time.Millisecond)
		l := limiters[o.countDenied][o.script]
		fmt.Fprintf(&b, "%d %v:", i, o)
		switch o.kind {
		case "allow":
			r, err := l.AllowN(ctx, o.keys[0], o.n)
			fmt.Fprintf(&b, " %+v %v", r, err)
		case "peek":
			r, err := l.Peek(ctx, o.keys[0])
			fmt.Fprintf(&b, " %+v %v", r, err)
		case "reset":
			fmt.Fprintf(&b, " %v", l.Reset(ctx, o.keys[0]))
		case "batch":
			requests := make([]ratelua.Request, len(o.keys))
			for j, k := range o.keys {
				requests[j] = ratelua.Request{Key: k, N: o.n}
			}
			for _, out := range l.AllowBatch(ctx, requests) {
				fmt.Fprintf(&b, " %+v %v", out.Result, out.Err)
			}
		case "resetmany":
			fmt.Fprintf(&b, " %v", l.ResetMany(ctx, o.keys))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// stateKeys are the state keys a played sequence may have written.
func stateKeys(t *testing.T, client ratelua.Client, prefix string, ops []op) []string {
	t.Helper()
	var keys []string
	for _, countDenied := range []bool{false, true} {
		p := prefix
		if countDenied {
			p += "-denied"
		}
		limiters := login.Limiters(t, client, ratelua.Options{Prefix: p})
		for _, o := range ops {
			for _, k := range o.keys {
				keys = append(keys, limiters[o.script].Key(k))
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// firstDifference quotes the first line where two transcripts differ.
func firstDifference(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n\t%s\n\t%s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(la), len(lb))
}
