package ratelua

import (
	"errors"
	"strings"
	"testing"
)

func TestStateKeyShape(t *testing.T) {
	s, _ := LookupScript(SlidingWindow, 1)
	if got := StateKey("rl", "user:42", s, "abcd0123"); got != "rl:{user:42}:sliding_window:v1:abcd0123" {
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
		if got := StateKey("p", eventKey, s, "h"); got != "p:{"+tag+"}:sliding_window:v1:h" {
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
	sw, _ := LookupScript(SlidingWindow, 1)
	tb, _ := LookupScript(TokenBucket, 1)
	a := StateKey("ratelua", eventKey, sw, "00000000")
	b := StateKey("ratelua", eventKey, tb, "ffffffff")
	tag := escapeTag(eventKey)
	if Slot(a) != Slot(tag) || Slot(b) != Slot(tag) {
		t.Fatalf("event key %q: slots %d, %d, tag %q slot %d", eventKey, Slot(a), Slot(b), tag, Slot(tag))
	}
	if err := SameSlot(a, b); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(tag, "{}") || tag == "" {
		t.Fatalf("tag %q of %q", tag, eventKey)
	}
	if unescape(tag) != eventKey {
		t.Fatalf("tag %q does not decode to %q", tag, eventKey)
	}
}

// unescape inverts escapeTag (for the tests).
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

func TestSameSlot(t *testing.T) {
	if err := SameSlot("{a}1", "{a}2", "{a}"); err != nil {
		t.Error(err)
	}
	if err := SameSlot(); err != nil {
		t.Error(err)
	}
	err := SameSlot("{a}1", "{b}1")
	if !errors.Is(err, ErrCrossSlot) || !strings.Contains(err.Error(), `"{b}1"`) {
		t.Errorf("SameSlot across slots: %v", err)
	}
	if Slot("123456789") != 0x31C3%16384 || Slot("foo") != 12182 {
		t.Errorf("Slot vectors: %d %d", Slot("123456789"), Slot("foo"))
	}
}
