package luatest

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// step is one command and its expected reply (or error message).
type step struct {
	cmd     string // space separated arguments
	want    any
	err     string
	advance time.Duration // clock advance before the command
}

func runSteps(t *testing.T, name string, steps []step) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		e := New(Options{})
		for i, s := range steps {
			e.Advance(s.advance)
			got, err := e.Do(strings.Fields(s.cmd)...)
			if s.err != "" {
				if err == nil || err.Error() != s.err {
					t.Fatalf("step %d %q: err = %v, want %q", i, s.cmd, err, s.err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d %q: %v", i, s.cmd, err)
			}
			if !reflect.DeepEqual(got, s.want) {
				t.Fatalf("step %d %q: got %#v, want %#v", i, s.cmd, got, s.want)
			}
		}
	})
}

func arr(v ...any) []any {
	if v == nil {
		return []any{}
	}
	return v
}
