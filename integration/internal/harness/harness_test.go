package harness

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that writes down how a test would have ended
// instead of ending it.
type recorder struct {
	testing.TB
	calls []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.calls = append(r.calls, "fatal: "+fmt.Sprintf(format, args...))
}

func (r *recorder) Skip(args ...any) { r.calls = append(r.calls, "skip: "+fmt.Sprint(args...)) }

// TestUnavailable: a missing server fails the test under CI=true and
// skips it otherwise, each time with the first line of the reason.
func TestUnavailable(t *testing.T) {
	err := errors.New("no redis server: redis-server not found\nthe log's tail")
	for ci, want := range map[string]string{
		"true":  "fatal: required under CI=true: no redis server: redis-server not found",
		"":      "skip: no redis server: redis-server not found",
		"false": "skip: no redis server: redis-server not found",
	} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			r := &recorder{TB: t}
			Unavailable(r, err)
			if len(r.calls) == 0 || r.calls[0] != want {
				t.Errorf("CI=%q: %q, want first %q", ci, r.calls, want)
			}
			if strings.Contains(strings.Join(r.calls, ""), "tail") {
				t.Errorf("CI=%q: %q: the reason's second line is shown", ci, r.calls)
			}
		})
	}
}
