package ratelua

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
)

// fixedWindowArgs is the ARGV of one fixed_window call.
func fixedWindowArgs(c model.Call, m *model.FixedWindow) []string {
	return []string{strconv.FormatInt(c.Count, 10), c.Unit, strconv.FormatInt(c.Now, 10), strconv.Itoa(c.Mode),
		strconv.FormatInt(m.Max, 10), strconv.FormatInt(m.Window, 10), strconv.FormatInt(m.Expire, 10)}
}

// TestFixedWindowAgreesWithModel drives fixed_window v7 (in luatest) and
// internal/model's FixedWindow with random calls (both modes, peeks,
// resets, counts past max, max 0) and compares every reply, the counter
// itself (GET), the key's existence and its TTL, and that a counting call
// of mode 1 is INCRBY and EXPIRE and nothing else (the reference's
// pipeline).
func TestFixedWindowAgreesWithModel(t *testing.T) {
	src := source(t, FixedWindow)
	r := rand.New(rand.NewPCG(7, 2026))
	calls := 0
	total := max(*propertyCalls/5, 1)
	denied, allowed := 0, 0
	for seq := 0; calls < total; seq++ {
		unit := []string{"s", "ms", "us"}[r.IntN(3)]
		m := &model.FixedWindow{Max: r.Int64N(12), Window: 1 + r.Int64N(100)*scale(unit), Expire: 1 + r.Int64N(400)}
		if seq%7 == 0 {
			m.Max = r.Int64N(model.MaxTime + 1)
		}
		e := frozenEngine()
		key := fmt.Sprintf("rl_dom_key_v%d_%d", seq, r.IntN(1000))
		now := r.Int64N(2_000_000_000) * scale(unit)
		var history []string
		for i := 0; i < 200 && calls < total; i++ {
			now += r.Int64N(3) * r.Int64N(m.Window+1)
			c := model.Call{Unit: unit, Now: now, Mode: r.IntN(2), Count: 1 + r.Int64N(4)}
			switch r.IntN(10) {
			case 0:
				c.Count = 0
			case 1:
				c.Count = -1
			case 2:
				c.Count = r.Int64N(m.Max + 3)
			}
			args := fixedWindowArgs(c, m)
			want := m.Do(c).Ints()
			got, res, err := runOn(t, e, src, key, args)
			calls++
			history = append(history, fmt.Sprintf("%v -> %v", args[:4], want))
			if err != nil {
				t.Fatalf("seq %d call %d: %v\nlast calls:\n%s", seq, i, err, strings.Join(history, "\n"))
			}
			if !equalInts(got, want) {
				t.Fatalf("seq %d call %d: reply %v, model %v (limit %v)\nlast calls:\n%s", seq, i, got, want, args[4:], strings.Join(history, "\n"))
			}
			if want[0] == 1 {
				allowed++
			} else {
				denied++
			}
			exists := e.Type(key) != "none"
			if exists != m.Exists() {
				t.Fatalf("seq %d call %d: key exists %v, model %v\nlast calls:\n%s", seq, i, exists, m.Exists(), strings.Join(history, "\n"))
			}
			if exists {
				if v, _ := e.Do("GET", key); v != strconv.FormatInt(m.Count(), 10) {
					t.Fatalf("seq %d call %d: counter %v, model %d", seq, i, v, m.Count())
				}
				if pttl := e.PTTL(key); pttl != m.TTLMillis() {
					t.Fatalf("seq %d call %d: PTTL %d, model %d", seq, i, pttl, m.TTLMillis())
				}
			}
			if keys := e.Keys(); len(keys) > 1 || len(keys) == 1 && keys[0] != key {
				t.Fatalf("seq %d call %d: keys %q exist, want only %q", seq, i, keys, key)
			}
			if c.Mode == 1 && c.Count > 0 {
				var names []string
				for _, call := range res.Trace {
					names = append(names, call.Name)
				}
				if strings.Join(names, " ") != "INCRBY EXPIRE" {
					t.Fatalf("seq %d call %d: mode 1 sent %v, want INCRBY EXPIRE (the reference's pipeline)", seq, i, names)
				}
			}
		}
	}
	if allowed < total/10 || denied < total/10 {
		t.Fatalf("%d allowed and %d denied of %d calls: the sequences do not exercise both", allowed, denied, calls)
	}
}

// TestFixedWindowCountsAsTheReference replays envoyproxy/ratelimit's
// counting by hand: a limit of 3, hits of 2 then 2 then 1 in one window
// (mode 1): the counter reads 2, 4, 5 (every hit counted, over the limit
// or not), the second and third calls are over the limit, and EXPIRE
// sets the given seconds.
func TestFixedWindowCountsAsTheReference(t *testing.T) {
	src := source(t, FixedWindow)
	e := frozenEngine()
	key := "prefixdomain_key_value_1700000040"
	for i, step := range []struct {
		hits    string
		allowed int64
		counter string
	}{{"2", 1, "2"}, {"2", 0, "4"}, {"1", 0, "5"}} {
		got, _, err := runOn(t, e, src, key, []string{step.hits, "s", "1700000041", "1", "3", "60", "60"})
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != step.allowed {
			t.Fatalf("call %d: allowed %d, want %d (reply %v)", i, got[0], step.allowed, got)
		}
		if v, _ := e.Do("GET", key); v != step.counter {
			t.Fatalf("call %d: counter %v, want %s", i, v, step.counter)
		}
		if got[3] != 59 {
			t.Fatalf("call %d: reset_after %d, want 59 (the window of 60 s starting at 1700000040)", i, got[3])
		}
	}
	if pttl := e.PTTL(key); pttl != 60_000 {
		t.Fatalf("PTTL %d, want 60000 (EXPIRE 60)", pttl)
	}
}

// TestFixedWindowRefusesBadInput checks that every malformed call is an
// error naming its argument and leaves the counter (and its TTL) as it
// was.
func TestFixedWindowRefusesBadInput(t *testing.T) {
	src := source(t, FixedWindow)
	good := []string{"1", "s", "1000", "1", "5", "60", "60"}
	with := func(i int, v string) []string {
		a := append([]string(nil), good...)
		a[i] = v
		return a
	}
	cases := []struct {
		name string
		keys []string
		argv []string
		want string
	}{
		{"two keys", []string{"{a}1", "{a}2"}, good, "expected exactly 1 key"},
		{"eventCount -0", nil, with(0, "-0"), "ARGV[1] eventCount"},
		{"eventCount 01", nil, with(0, "01"), "ARGV[1] eventCount"},
		{"eventCount past 2^52", nil, with(0, "4503599627370497"), "ARGV[1] eventCount"},
		{"unit h", nil, with(1, "h"), "ARGV[2] unit"},
		{"now negative", nil, with(2, "-1"), "ARGV[3] now"},
		{"now 1e3", nil, with(2, "1e3"), "ARGV[3] now"},
		{"mode 2", nil, with(3, "2"), "ARGV[4] mode"},
		{"max negative", nil, with(4, "-1"), "ARGV[5] (limit 1 max)"},
		{"max past 2^52", nil, with(4, "4503599627370497"), "ARGV[5] (limit 1 max)"},
		{"window 0", nil, with(5, "0"), "ARGV[6] (limit 1 window)"},
		{"expire 0", nil, with(6, "0"), "ARGV[7] (limit 1 expire)"},
		{"expire +60", nil, with(6, "+60"), "ARGV[7] (limit 1 expire)"},
		{"two limits", nil, append(append([]string(nil), good...), "5", "60", "60"), "expected exactly 1 limit"},
		{"no limit", nil, good[:4], "expected exactly 1 limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := frozenEngine()
			if _, err := e.Do("SET", "k", "2", "EX", "100"); err != nil {
				t.Fatal(err)
			}
			keys := c.keys
			if keys == nil {
				keys = []string{"k"}
			}
			_, err := e.Run(src, keys, c.argv)
			if err == nil || !strings.Contains(err.Error(), "ERR ratelua:") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ARGV %q: error %v, want one starting ERR ratelua: naming %q", c.argv, err, c.want)
			}
			if v, _ := e.Do("GET", "k"); v != "2" || e.PTTL("k") != 100_000 {
				t.Fatalf("the refused call changed the counter: %v, PTTL %d", v, e.PTTL("k"))
			}
			if model.AcceptsCanonical(FixedWindow, keys, c.argv) {
				t.Fatalf("the model's validation accepts ARGV %q that the script refuses", c.argv)
			}
		})
	}
	if !model.AcceptsCanonical(FixedWindow, []string{"k"}, good) {
		t.Fatalf("the model's validation refuses the good call %q", good)
	}
}

// TestFixedWindowRefusesOtherState checks that a key holding another
// script's state, or a string that is not an integer, is refused in both
// modes and left unchanged.
func TestFixedWindowRefusesOtherState(t *testing.T) {
	src := source(t, FixedWindow)
	for _, mode := range []string{"0", "1"} {
		for _, setup := range [][]string{{"HSET", "k", "m", "1"}, {"SET", "k", "abc"}, {"SET", "k", "1.5"}} {
			e := frozenEngine()
			if _, err := e.Do(setup...); err != nil {
				t.Fatal(err)
			}
			before := fmt.Sprint(e.Dump("k"))
			_, err := e.Run(src, []string{"k"}, []string{"1", "s", "1000", mode, "5", "60", "60"})
			if err == nil || !strings.Contains(err.Error(), "ERR ratelua: KEYS[1] holds a value of another type than fixed_window state") {
				t.Fatalf("mode %s on %v: error %v, want the refusal of another state", mode, setup, err)
			}
			if after := fmt.Sprint(e.Dump("k")); after != before {
				t.Fatalf("mode %s on %v: state %s became %s", mode, setup, before, after)
			}
		}
	}
}
