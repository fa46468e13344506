package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadDump reads the total and the collector's periodic steps from
// dumps written as callgrind writes them, with names in full (as the bench
// asks) and compressed (callgrind's default), and refuses a dump without
// a summary.
func TestReadDump(t *testing.T) {
	cases := []struct {
		name, dump string
		want       cgCount
		err        string
	}{
		{
			name: "names in full",
			dump: `version: 1
positions: line
events: Ir
summary: 2275078
fn=call
0 750
cfn=(below main)
calls=3 0
0 99
cfn=lua_gc
calls=1 0
0 94501
cfn=luaV_execute
calls=50 0
0 1000
fn=evalGenericCommand
cfn=lua_gc
calls=2 0
0 180000
`,
			want: cgCount{total: 2275078, collector: 274501, steps: 3},
		},
		{
			name: "names compressed",
			dump: `events: Ir
fn=(1) call
cfn=(2) lua_gc
calls=1 0
0 5000
fn=(3) evalGenericCommand
cfn=(2)
calls=1 0
0 7000
cfn=(4) lua_gcx
calls=1 0
0 11
totals: 90000
`,
			want: cgCount{total: 90000, collector: 12000, steps: 2},
		},
		{
			name: "first named by fn=",
			dump: `summary: 10
fn=(7) lua_gc
0 3
fn=(1) call
cfn=(7)
calls=4 0
0 400
`,
			want: cgCount{total: 10, collector: 400, steps: 4},
		},
		{name: "no summary", dump: "events: Ir\nfn=call\n0 5\n", err: "no summary line"},
		{name: "no cost after calls", dump: "summary: 5\ncfn=lua_gc\ncalls=1 0\n", err: "ends within a call to lua_gc"},
		{name: "a bad cost", dump: "summary: 5\ncfn=lua_gc\ncalls=1 0\n0 x\n", err: `"0 x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "callgrind.out.1")
			if err := os.WriteFile(path, []byte(c.dump), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readDump(path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("readDump: error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("readDump = %+v, want %+v", got, c.want)
			}
		})
	}
}
