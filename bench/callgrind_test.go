package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// collectorProbe allocates about 10 KiB a call (101 tables), so that under
// Lua's default collector its calls take collection steps of their own (a
// quarter of their count), at a cost set by where the cycle stands.
const collectorProbe = `local t = {}
for i = 1, 100 do t[i] = {i, ARGV[1]} end
return #t`

// TestCollectorSetApart: on a server under callgrind, both Lua states hold
// quietCollector's settings, and windows of 50 calls
// of an allocating script, by EVAL and by FCALL, each hold exactly one
// call of the collector's periodic lua_gc, whose share is counted, and the
// rest of each window costs the same within 1%, wherever the window starts
// (with the collector left to its default, the probe's own collection
// steps move it by 3%).
func TestCollectorSetApart(t *testing.T) {
	for _, kind := range guardKinds {
		t.Run(string(kind), func(t *testing.T) {
			needCallgrind(t, kind)
			ctx := context.Background()
			s, err := startCallgrind(ctx, kind)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Both Lua states hold quietCollector's settings (setting them
			// again answers the ones before).
			settings := "return {collectgarbage('setpause', 100000), collectgarbage('setstepmul', 1000000)}"
			lib := "#!lua name=ratelua_bench_probe\nredis.register_function('ratelua_bench_probe', function(keys, args)\nlocal ARGV = args\n" +
				collectorProbe + "\nend)\nredis.register_function('ratelua_bench_settings', function()\n" + settings + "\nend)"
			if _, err := s.node.Do(ctx, "FUNCTION", "LOAD", "REPLACE", lib); err != nil {
				t.Fatal(err)
			}
			for _, call := range [][]string{{"EVAL", settings, "0"}, {"FCALL", "ratelua_bench_settings", "0"}} {
				got, err := s.node.Do(ctx, call...)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != "[100000 1000000]" {
					t.Errorf("%s: the collector's pause and step multiplier were %v, want [100000 1000000] (quietCollector)", call[0], got)
				}
			}
			calls := map[string][]string{
				"EVAL":  {"EVAL", collectorProbe, "0", "a string long enough to be allocated"},
				"FCALL": {"FCALL", "ratelua_bench_probe", "0", "a string long enough to be allocated"},
			}
			for _, how := range []string{"EVAL", "FCALL"} {
				var own []int64
				// 100 calls not counted first (the script compiled, the
				// allocator's pages taken), then some before each window,
				// so that each starts at another point of the collector's
				// cycle and of the server's count of 50.
				for _, between := range []int{100, 7, 23, 41} {
					for range between {
						if _, err := s.node.Do(ctx, calls[how]...); err != nil {
							t.Fatal(err)
						}
					}
					c, err := s.measure(ctx, func() error {
						for range 50 {
							if _, err := s.node.Do(ctx, calls[how]...); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if c.steps != 1 || c.collector <= 0 {
						t.Fatalf("%s: a window of 50 calls held %d calls of %s costing %d, want one", how, c.steps, collectorFunc, c.collector)
					}
					own = append(own, c.total-c.collector)
				}
				lo, hi := slices.Min(own), slices.Max(own)
				if float64(hi-lo) > 0.01*float64(lo) {
					t.Errorf("%s: windows of the same 50 calls cost %v without the collector's periodic call: more than 1%% apart", how, own)
				}
				t.Logf("%s: 50 calls cost %v without the collector's periodic call", how, own)
			}
		})
	}
}
