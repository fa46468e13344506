package ratelua_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/doccalls"
	"github.com/ratelua/ratelua/luatest"
)

// newestScripts returns the newest version of each script: the Go API's
// default, and what the docs show.
func newestScripts() map[string]ratelua.Script {
	out := map[string]ratelua.Script{}
	for _, s := range ratelua.Scripts() {
		if s.Version > out[s.Name].Version {
			out[s.Name] = s
		}
	}
	return out
}

// TestDocCalls runs every raw call that README.md and lua/README.md show
// on the embedded engine and requires the reply they document: a script
// named by SHA1 must be the newest version of a script in the manifest
// (the default the docs describe), and each block starts from no state.
// (The embedded engine is checked against the real servers by the
// differential tests; running these calls on redis-server and
// valkey-server too is still to do.)
func TestDocCalls(t *testing.T) {
	bySHA := map[string]ratelua.Script{}
	for _, s := range ratelua.Scripts() {
		bySHA[s.SHA1] = s
	}
	newest := newestScripts()
	total := 0
	for _, page := range []string{"README.md", "lua/README.md"} {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := doccalls.Parse(string(raw))
		if err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		for _, block := range blocks {
			e := luatest.New(luatest.Options{})
			for _, c := range block {
				total++
				s, ok := bySHA[c.Script]
				if name := c.Name(); name != "" {
					s, ok = newest[name]
				}
				if !ok {
					t.Errorf("%s:%d: %s is no script of the manifest", page, c.Line, c.Script)
					continue
				}
				if s.Version != newest[s.Name].Version {
					t.Errorf("%s:%d: %s is not the newest version of %s (v%d)", page, c.Line, s, s.Name, newest[s.Name].Version)
				}
				res, err := e.Run(s.Source, []string{c.Key}, c.Args)
				var got []int64
				if err == nil {
					got, err = luatest.Ints(res.Reply)
				}
				if err != nil || fmt.Sprint(got) != fmt.Sprint(c.Reply) {
					t.Errorf("%s:%d: %s %v answers %v %v, the page says %v", page, c.Line, s, c.Args, got, err, c.Reply)
				}
			}
		}
	}
	if total < 20 {
		t.Errorf("only %d documented calls found: the pages' blocks are not read", total)
	}
	t.Logf("%d documented calls answered as documented", total)
}
