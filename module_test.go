package ratelua

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRootRequiresOnlyTheCore: the root module is the library, which
// needs rueidis and gopher-lua; every client, front and test bench is a
// nested module, so that a user's go.mod gains nothing they did not choose.
func TestRootRequiresOnlyTheCore(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var direct []string
	inBlock := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && !strings.Contains(line, "// indirect") {
			direct = append(direct, f[0])
		}
	}
	slices.Sort(direct)
	if want := []string{"github.com/redis/rueidis", "github.com/yuin/gopher-lua"}; !slices.Equal(direct, want) {
		t.Errorf("the root module requires %v, want only %v", direct, want)
	}
}
