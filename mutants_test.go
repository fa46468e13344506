package ratelua

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMutantsApply: every planted bug of mutants/ (make mutants) is in the
// manifest with a cost, a folder and a command, every patch is named by
// it, and every patch still applies to the tree, so that a change to the
// code cannot quietly retire one (mutants/README.md says how to remake a
// patch).
func TestMutantsApply(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("mutants", "manifest"))
	if err != nil {
		t.Fatal(err)
	}
	patches := map[string]bool{}
	lines := 0
	for i, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		lines++
		where := "mutants/manifest line " + strconv.Itoa(i+1)
		if len(f) < 4 {
			t.Errorf("%s: want name, cost, folder and command: %q", where, line)
			continue
		}
		name, cost, dir := f[0], f[1], f[2]
		if cost != "cheap" && cost != "full" {
			t.Errorf("%s: %s: cost %q, want cheap or full", where, name, cost)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Errorf("%s: %s: folder %q: %v", where, name, dir, err)
		}
		patch := strings.SplitN(name, "@", 2)[0] + ".patch"
		text, err := os.ReadFile(filepath.Join("mutants", patch))
		if err != nil {
			t.Errorf("%s: %s: %v", where, name, err)
			continue
		}
		if base := strings.TrimSuffix(patch, ".patch"); !strings.HasPrefix(string(text), "Planted bug "+base+":\n") {
			t.Errorf("mutants/%s does not start with \"Planted bug %s:\" and what the bug is", patch, base)
		}
		patches[patch] = true
	}
	if lines == 0 {
		t.Fatal("mutants/manifest lists no planted bug")
	}
	files, err := filepath.Glob(filepath.Join("mutants", "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !patches[filepath.Base(f)] {
			t.Errorf("%s is in no line of mutants/manifest", f)
		}
	}
	git, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git is needed to check the patches under CI=true: %v", err)
		}
		t.Skipf("no git to check that the patches apply: %v", err)
	}
	for patch := range patches {
		out, err := exec.Command(git, "apply", "--check", filepath.Join("mutants", patch)).CombinedOutput()
		if err != nil {
			t.Errorf("mutants/%s no longer applies to the tree (remake it: mutants/README.md): %v\n%s", patch, err, out)
		}
	}
}
