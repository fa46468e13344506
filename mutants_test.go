package ratelua

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// TestMutantTargetsAreTested: a planted bug in a script version
// (a patch editing lua/src/<name>.v<N>.lua) is caught only while the
// tests that run every version (versions: the property tests, the tie
// rule, the cases) still run version N of that script. This fails when a
// targeted version leaves the embedded set the tests iterate, so that a
// mutant cannot go unseen because its version stopped being tested.
func TestMutantTargetsAreTested(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("mutants", "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	target := regexp.MustCompile(`(?m)^\+\+\+ b/lua/src/([a-z_0-9]+)\.v([0-9]+)\.lua$`)
	targeted := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range target.FindAllStringSubmatch(string(text), -1) {
			name, version := m[1], m[2]
			if strings.HasPrefix(name, "_") {
				continue // a prelude: every script of that version includes it
			}
			targeted++
			var tested []string
			for _, s := range versions(t, name) {
				tested = append(tested, strconv.Itoa(s.Version))
			}
			if !slices.Contains(tested, version) {
				t.Errorf("%s plants a bug in %s v%s, but the tests run %s only at versions %v", f, name, version, name, tested)
			}
		}
	}
	if targeted == 0 {
		t.Fatal("no planted bug targets a script version: the check checks nothing")
	}
}
