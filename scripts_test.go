package ratelua

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/internal/luagen"
)

// released pins the SHA1 of every released script version. A released
// version is immutable: changing its behaviour means a new version file.
// The tests below find the scripts from the embedded set and the manifest,
// so a version that is embedded but not pinned here fails them, except
// the version in development (inDevelopment), which is pinned when it is
// released (CONTRIBUTING.md, Releasing) and frozen from then on.
var released = map[string]string{
	"ar1@v5":            "3b0a5f13e4124b97b1c9bd13fbfbf9d4c4e60886",
	"concurrency@v5":    "0c3c1f71d9813c963119429b2ca2e36fc4078c52",
	"sliding_window@v5": "0d015f7c7eb2e9b8c3a661fb8ab7c2ea83fa2f33",
	"token_bucket@v5":   "d8e8a67049b1f4563ecb34d32b307cd4d7a94d74",
	"zset_log@v5":       "20313d7d919b4996c3f81a69b57d43efce28cc27",
	"ar1@v6":            "dc1edb0253762c16a12479d63f339c2ed065420b",
	"concurrency@v6":    "dbb5ceb63a603f0ef503ce5421380d608b586d31",
	"sliding_window@v6": "3cb2db3cf067274b12389e8573b6834fd296685f",
	"token_bucket@v6":   "c45e25b0f7af4813d94a25e367ef826eb8179205",
	"zset_log@v6":       "2ba225a7d9123ff504ff64dce434e108130302f6",
}

// inDevelopment is the script version being written for the next release:
// it changes freely until then and has no pins. At the release, pin its
// scripts and library above and make this the next version.
const inDevelopment = 7

// releasedLibraries pins the SHA1 of every released Functions library.
var releasedLibraries = map[int]string{
	5: "298920f9ca406f17490499ae4fcc5816ff7bc413",
	6: "678d5bb865237a7b2da247f4a71e04721e840621",
}

// embeddedLibraries lists the release of every Functions library file
// embedded in lua/, found from the files, not from releasedLibraries.
func embeddedLibraries(t *testing.T) []int {
	t.Helper()
	files, err := luaFiles.ReadDir("lua")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range files {
		rest, ok := strings.CutPrefix(f.Name(), "ratelua_v")
		if !ok {
			continue
		}
		digits, ok := strings.CutSuffix(rest, ".library.lua")
		v, err := strconv.Atoi(digits)
		if !ok || err != nil || luagen.LibraryFile(v) != f.Name() {
			t.Errorf("lua/%s: not a library file name", f.Name())
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatal("no Functions library is embedded")
	}
	return out
}

func TestReleasedScriptsAreUnchanged(t *testing.T) {
	scripts := slices.DeleteFunc(allScripts(t), func(s Script) bool { return s.Version == inDevelopment })
	if len(scripts) != len(released) {
		t.Errorf("%d embedded released scripts, %d pinned", len(scripts), len(released))
	}
	for _, s := range scripts {
		want, ok := released[s.String()]
		if !ok {
			t.Errorf("%s is embedded but not pinned in released", s)
			continue
		}
		if got := luagen.SHA1([]byte(s.Source)); got != want || s.SHA1 != want {
			t.Errorf("%s: source SHA1 %s, Script.SHA1 %s, released %s: a released version must not change", s, got, s.SHA1, want)
		}
	}
	libraries := slices.DeleteFunc(embeddedLibraries(t), func(v int) bool { return v == inDevelopment })
	if len(libraries) != len(releasedLibraries) {
		t.Errorf("%d embedded libraries, %d released", len(libraries), len(releasedLibraries))
	}
	for _, version := range libraries {
		want, ok := releasedLibraries[version]
		lib, err := ReleaseLibrary(version)
		switch {
		case !ok:
			t.Errorf("library v%d is embedded but not pinned in releasedLibraries", version)
		case err != nil:
			t.Error(err)
		case luagen.SHA1([]byte(lib.Source)) != want:
			t.Errorf("library %s has SHA1 %s, released %s: a released library must not change", lib.Name, luagen.SHA1([]byte(lib.Source)), want)
		}
	}
	for _, s := range scripts {
		if _, ok := releasedLibraries[s.Version]; !ok {
			t.Errorf("%s has no pinned library of its release", s)
		}
	}
}

// TestLibraryRunsTheScripts: each function of a Functions library runs its
// script's exact text: the shared prelude and the script's helpers run once
// per load at the library's top level and the body is the script after its
// "-- #call" line (TestFunctionsAgreeWithScripts in integration/core runs
// both forms on the servers).
func TestLibraryRunsTheScripts(t *testing.T) {
	newest := 0
	for _, s := range allScripts(t) {
		newest = max(newest, s.Version)
	}
	if lib := newestLibrary(t); lib.Name != luagen.LibraryName(newest) {
		t.Errorf("newestLibrary(t) is %q, want the newest version's, %s", lib.Name, luagen.LibraryName(newest))
	}
	for _, s := range allScripts(t) {
		lib, err := ReleaseLibrary(s.Version)
		if err != nil {
			t.Fatal(err)
		}
		if want := "#!lua name=ratelua_v" + strconv.Itoa(s.Version) + "\n"; !strings.HasPrefix(lib.Source, want) {
			t.Fatalf("library %q starts %q", lib.Name, lib.Source[:min(40, len(lib.Source))])
		}
		register := "redis.register_function('" + s.Function() + "', function(KEYS, ARGV)\n"
		_, after, ok := strings.Cut(s.Source, "\n-- #call")
		if !ok {
			t.Fatalf("%s has no -- #call line", s)
		}
		_, body, _ := strings.Cut(after, "\n")
		if strings.Count(lib.Source, register+body+"end)\n") != 1 {
			t.Errorf("%s: the library does not hold its per-call source as the body of %s", s, s.Function())
		}
	}
}

// TestReadmeSHA1s: every SHA1 the README shows is a released script's.
func TestReadmeSHA1s(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := regexp.MustCompile(`\b[0-9a-f]{40}\b`).FindAllString(string(readme), -1)
	if len(shown) == 0 {
		t.Fatal("the README shows no SHA1")
	}
	known := map[string]bool{}
	for _, s := range allScripts(t) {
		known[s.SHA1] = true
	}
	for _, sha := range shown {
		if !known[sha] {
			t.Errorf("the README shows SHA1 %s, which is no embedded script's", sha)
		}
	}
}

func TestManifestDescribesEveryScript(t *testing.T) {
	for _, s := range allScripts(t) {
		if s.SHA1 != luagen.SHA1([]byte(s.Source)) {
			t.Errorf("%s: manifest SHA1 %s does not match the source", s, s.SHA1)
		}
		c := s
		if len(c.Keys) != 1 || len(c.Reply) != 5 || len(c.Argv) < 5 || len(c.Limit) == 0 ||
			c.Fresh == "" || c.State == "" || c.Cost == "" {
			t.Errorf("%s: incomplete contract %+v", s, c)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		s, err := NewRegistry().Latest(name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Name != name || s.Version < 1 {
			t.Errorf("NewRegistry().Latest(%q) = %s", name, s)
		}
		got, err := NewRegistry().Lookup(name, s.Version)
		if err != nil || got.SHA1 != s.SHA1 {
			t.Errorf("NewRegistry().Lookup(%q, %d) = %s, %v", name, s.Version, got, err)
		}
	}
	if _, err := NewRegistry().Lookup(SlidingWindow, 99); !errors.Is(err, ErrUnknownScript) {
		t.Errorf("unknown version: err %v, want ErrUnknownScript", err)
	}
	if _, err := NewRegistry().Latest("nope"); !errors.Is(err, ErrUnknownScript) {
		t.Errorf("unknown name: err %v, want ErrUnknownScript", err)
	}
	a, b := Scripts(), Scripts()
	a[0].Source = "changed"
	if b[0].Source == "changed" {
		t.Error("Scripts returns shared storage")
	}
}

// TestRuntimeDoesNotImportTheGenerator: internal/luagen (regexps, contract
// prose) is build-time only; a user's binary links internal/manifest.
func TestRuntimeDoesNotImportTheGenerator(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if slices.Contains(deps, "github.com/ratelua/ratelua/internal/luagen") || !slices.Contains(deps, "github.com/ratelua/ratelua/internal/manifest") {
		t.Errorf("the runtime's dependencies: %v", deps)
	}
}

// TestReadmeIsShort: the README is a page a newcomer reads in five
// minutes; history, the wire contract and how to test live elsewhere.
func TestReadmeIsShort(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > 300 {
		t.Errorf("README.md has %d lines, want at most 300", n)
	}
	for _, doc := range []string{"CHANGELOG.md", "CONTRIBUTING.md", "lua/README.md"} {
		if _, err := os.Stat(doc); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}
