package ratelua

import (
	"reflect"
	"testing"
)

// TestPlainReply: Node.Do on rueidis gives only the shapes Node promises,
// whatever RESP3 type the server answered with.
func TestPlainReply(t *testing.T) {
	got := plainReply([]any{
		map[string]any{"b": int64(2), "a": []any{1.5, true}},
		1.700000027e+12,
		false,
		nil,
		"s",
		[]any{"a", []any{}},
	})
	want := []any{
		[]any{"a", []any{"1.5", int64(1)}, "b", int64(2)},
		"1700000027000",
		int64(0),
		nil,
		"s",
		[]any{"a", []any{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plainReply: %#v\nwant %#v", got, want)
	}
}
