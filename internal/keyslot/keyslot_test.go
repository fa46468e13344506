package keyslot

import "testing"

func TestCRC16(t *testing.T) {
	if got := CRC16("123456789"); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#x, want 0x31c3", got)
	}
	if got := CRC16(""); got != 0 {
		t.Fatalf("CRC16(\"\") = %#x, want 0", got)
	}
}

func TestSlot(t *testing.T) {
	tests := []struct {
		key  string
		same string // key whose slot must be equal; "" when want is used
		want int
	}{
		{key: "foo", want: 12182},
		{key: "bar", want: 5061},
		{key: "123456789", want: 0x31C3 % 16384},
		{key: "{user1000}.following", same: "user1000"},
		{key: "{user1000}.followers", same: "user1000"},
		{key: "foo{}{bar}", same: "foo{}{bar}", want: int(CRC16("foo{}{bar}") % 16384)},
		{key: "foo{{bar}}zap", same: "{bar"},
		{key: "foo{bar}{zap}", same: "bar"},
		{key: "{}", want: int(CRC16("{}") % 16384)},
		{key: "a{b", want: int(CRC16("a{b") % 16384)},
		{key: "a}b{c}", same: "c"},
	}
	for _, tt := range tests {
		got := Slot(tt.key)
		if tt.same != "" && tt.same != tt.key {
			if want := Slot(tt.same); got != want {
				t.Errorf("Slot(%q) = %d, want Slot(%q) = %d", tt.key, got, tt.same, want)
			}
			continue
		}
		if int(got) != tt.want {
			t.Errorf("Slot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

func TestHashTag(t *testing.T) {
	tests := map[string]string{
		"{user1000}.following": "user1000",
		"foo{}{bar}":           "foo{}{bar}",
		"foo{{bar}}zap":        "{bar",
		"foo{bar}{zap}":        "bar",
		"plain":                "plain",
	}
	for in, want := range tests {
		if got := HashTag(in); got != want {
			t.Errorf("HashTag(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkSlot(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Slot("{user1000}.following")
	}
}
