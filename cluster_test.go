package ratelua

import (
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/wire"
)

func TestStateKeyShape(t *testing.T) {
	s, _ := NewRegistry().Lookup(SlidingWindow, 5)
	if got := stateKey("rl", "user:42", s, "abcd0123"); got != "rl:{user:42}:sliding_window:v5:abcd0123" {
		t.Errorf("StateKey = %q", got)
	}
	for eventKey, tag := range map[string]string{
		"":        "%",
		"a{b}c":   "a%7Bb%7Dc",
		"100%":    "100%25",
		"}":       "%7D",
		"{x}":     "%7Bx%7D",
		"plain-1": "plain-1",
	} {
		if got := stateKey("p", eventKey, s, "h"); got != "p:{"+tag+"}:sliding_window:v5:h" {
			t.Errorf("event key %q: %q, want tag %q", eventKey, got, tag)
		}
	}
}

// checkEventKey asserts the slot rules for one event key: the state key
// hashes to the slot of its escaped tag whatever the event key holds, keys
// of other scripts and limits share that slot, and the escaping is
// reversible (no two event keys collide).
func checkEventKey(t *testing.T, eventKey string) {
	t.Helper()
	sw, _ := NewRegistry().Lookup(SlidingWindow, 5)
	tb, _ := NewRegistry().Lookup(TokenBucket, 1)
	a := stateKey("ratelua", eventKey, sw, "00000000")
	b := stateKey("ratelua", eventKey, tb, "ffffffff")
	tag := wire.EscapeTag(eventKey)
	if wire.Slot(a) != wire.Slot(tag) || wire.Slot(b) != wire.Slot(tag) {
		t.Fatalf("event key %q: slots %d, %d, tag %q slot %d", eventKey, wire.Slot(a), wire.Slot(b), tag, wire.Slot(tag))
	}
	if strings.ContainsAny(tag, "{}") || tag == "" {
		t.Fatalf("tag %q of %q", tag, eventKey)
	}
	if strings.HasPrefix(tag, "%H") {
		if len(tag) != 66 || len(wire.EscapeTag(eventKey+"x")) != 66 || wire.EscapeTag(eventKey+"x") == tag {
			t.Fatalf("long event key (%d bytes): tag %q", len(eventKey), tag)
		}
		return
	}
	if len(tag) > wire.MaxEventKey || unescape(tag) != eventKey {
		t.Fatalf("tag %q does not decode to %q", tag, eventKey)
	}
}

// unescape inverts wire.EscapeTag (for the tests).
func unescape(tag string) string {
	if tag == "%" {
		return ""
	}
	r := strings.NewReplacer("%7B", "{", "%7D", "}", "%25", "%")
	return r.Replace(tag)
}

func TestEventKeysKeepTheirSlot(t *testing.T) {
	for _, k := range []string{"", "a", "{", "}", "{}", "}{", "a{b}c", "{user1000}.following", "%", "%7B", "%25", "\x00\xff", strings.Repeat("{", 100)} {
		checkEventKey(t, k)
	}
}

func FuzzEventKeySlot(f *testing.F) {
	for _, k := range []string{"", "{a}", "}{", "%7D", "x{y}z{w}"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, eventKey string) { checkEventKey(t, eventKey) })
}

// TestLongEventKeysAreDigested: a state key stays short whatever the event
// key's size, and two long event keys that differ only at the end get two
// keys.
func TestLongEventKeysAreDigested(t *testing.T) {
	l, _ := NewTokenBucket(noClient{}, Options{}, PerSecond(1, 1))
	a, b := strings.Repeat("x", 1<<20), strings.Repeat("x", 1<<20-1)+"y"
	ka, kb := l.Key(a), l.Key(b)
	if len(ka) > 200 || ka == kb {
		t.Errorf("keys of long event keys: %d bytes, %q vs %q", len(ka), ka, kb)
	}
	edge := strings.Repeat("e", wire.MaxEventKey)
	if k := l.Key(edge); !strings.Contains(k, "{"+edge+"}") {
		t.Errorf("an event key of exactly %d bytes is kept: %q", wire.MaxEventKey, k)
	}
	if k := l.Key(edge + "e"); strings.Contains(k, edge) || !strings.Contains(k, "{%H") {
		t.Errorf("an event key of %d bytes is digested: %q", wire.MaxEventKey+1, k)
	}
	// '%' escapes to three bytes: the limit is on the escaped form.
	if k := l.Key(strings.Repeat("%", 43)); !strings.Contains(k, "{%H") {
		t.Errorf("an event key escaping past %d bytes is digested: %q", wire.MaxEventKey, k)
	}
	if !wire.IsStateKey("ratelua", ka) || !wire.IsStateKey("ratelua", l.Key("")) || !wire.IsStateKey("ratelua", l.Key("{}%")) {
		t.Errorf("state keys not recognised: %q %q", ka, l.Key(""))
	}
	for _, k := range []string{"ratelua:{a}:token_bucket:v2:abcd012", "ratelua:{a}:Token:v2:abcd0123", "ratelua:{a{b}:x:v1:abcd0123",
		"ratelua:admin:{a}:x:v1:abcd0123", "ratelua:{}:x:v1:abcd0123", "ratelua:{a}:x:v01:abcd0123", "ratelua:{a}:x:v1:abcd0123:extra"} {
		if wire.IsStateKey("ratelua", k) {
			t.Errorf("%q taken for a state key", k)
		}
	}
}
