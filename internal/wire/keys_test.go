package wire

import "testing"

func TestSlotVectors(t *testing.T) {
	if Slot("123456789") != 0x31C3%16384 || Slot("foo") != 12182 || Slot("{foo}bar") != 12182 {
		t.Errorf("slot vectors: %d %d %d", Slot("123456789"), Slot("foo"), Slot("{foo}bar"))
	}
}

// TestTagSlot: the slot the fallback follows for an event key is the slot
// of every state key of it, whatever the key holds.
func TestTagSlot(t *testing.T) {
	for _, k := range []string{"", "user:42", "a{b}c", "{", "%", string(make([]byte, 300))} {
		if got, want := TagSlot(k), Slot(StateKey("p", k, "token_bucket", 6, "abcd0123")); got != want {
			t.Errorf("TagSlot(%q) = %d, the state key's slot is %d", k, got, want)
		}
	}
}
