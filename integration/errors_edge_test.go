package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// TestServerErrorKeepsTheServersText (row 8): a script's error reply is
// repeated whole in ServerError's message (the range an argument must be
// in is what tells the caller how to fix it); only the caller's input the
// reply quotes is shortened.
func TestServerErrorKeepsTheServersText(t *testing.T) {
	script, err := ratelua.NewRegistry().Lookup("sliding_window", 5)
	if err != nil {
		t.Fatal(err)
	}
	limits := []string{"ms", "", "0", "1", "5000", "1000"}
	onEachFamily(t, func(t *testing.T, client ratelua.Client, _ *testbench.Node, prefix string) {
		for _, tt := range []struct {
			input string
			want  []string // in the message
		}{
			{"abc", []string{"ARGV[1] eventCount must be a canonical integer in [-2^52, 2^52], got 'abc'"}},
			{strings.Repeat("9", 5000), []string{"ARGV[1] eventCount must be a canonical integer in [-2^52, 2^52], got '" + strings.Repeat("9", 40)}},
			{"\x1b[2J" + strings.Repeat("x", 100), []string{"[-2^52, 2^52], got '", `\\x1b[2J`}},
		} {
			err := script.Run(context.Background(), client, prefix+":{k}", append([]string{tt.input}, limits...), make([]int64, 5))
			var se *ratelua.ServerError
			if !errors.As(err, &se) {
				t.Fatalf("input %.20q: %v, want a ServerError", tt.input, err)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("input %.20q: message %q does not hold %q", tt.input, msg, w)
				}
			}
			if len(msg) > 512 || strings.ContainsAny(msg, "\x1b\x00") {
				t.Errorf("input %.20q: %d bytes, unescaped control bytes: %q", tt.input, len(msg), msg)
			}
		}
	})
}
