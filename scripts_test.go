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
var released = map[string]string{
	"ar1@v1":            "a7b9b0d3fdad74032d111255fd32d02082e57f34",
	"sliding_window@v1": "2f2ea6f3513ef8c7d963a4ab7afe0821970ce88b",
	"token_bucket@v1":   "2afa7bd73dea9fb3f425f3917c8bb92b201249a6",
	"zset_log@v1":       "2a26ae32e1037a5853db43aad9727ef06ed39135",
	"ar1@v2":            "cc8b1603a618254326c52b7216fc46b4ea39e836",
	"sliding_window@v2": "14345b841ce5247dcf962f133ef4ce2667b869d9",
	"token_bucket@v2":   "23403c52ad32baec1f594b4e2ad1044e16e66fd2",
	"zset_log@v2":       "8701d9e1d49f9b2d76e1c5f38b662f21bb33e933",
	"ar1@v3":            "c6a5007653600ea1daf5ac736626e8b97df32aec",
	"sliding_window@v3": "576a523577b2dc4e9afe582f135a1c5ccc2d8676",
	"token_bucket@v3":   "f6d117a822b29e616f96d0361d06b1a448ec768f",
	"zset_log@v3":       "590b3b32e910734634ab458e032e0119dd787d7e",
	"ar1@v4":            "94165b562b7155caa1c70eb7c5949566ad20eacc",
	"sliding_window@v4": "2364bcdd9f2604236c07f521dc5e9454337318a9",
	"token_bucket@v4":   "515e7d4077ad070fafc8844496148a7b3fae4c79",
	"zset_log@v4":       "388c49f8d953a40b375e993a6132e1bcadc4d038",

	// v5, a line each.
	"ar1@v5": "3b0a5f13e4124b97b1c9bd13fbfbf9d4c4e60886",

	"sliding_window@v5": "0d015f7c7eb2e9b8c3a661fb8ab7c2ea83fa2f33",

	"token_bucket@v5": "d8e8a67049b1f4563ecb34d32b307cd4d7a94d74",

	"zset_log@v5": "20313d7d919b4996c3f81a69b57d43efce28cc27",
}

// releasedLibraries pins the SHA1 of every released Functions library.
var releasedLibraries = map[int]string{
	1: "b5d6726215e3f89b57060df4651010706e8e317a",
	2: "6a7c5846d7405828158efae1db4425973059b8c3",
	3: "af452779d9ca7411ecb1437ba90874446452b90a",
	4: "f4fd613c69e2857c4af893090d8e9cba2240060e",
}

func TestReleasedScriptsAreUnchanged(t *testing.T) {
	scripts := Scripts()
	if len(scripts) != len(released) {
		t.Errorf("%d embedded scripts, %d released", len(scripts), len(released))
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
}

// TestGenerated checks that lua/*.lua and lua/manifest.json are exactly what
// lua/src generates (run `make generate` after editing lua/src).
func TestGenerated(t *testing.T) {
	scripts, err := luagen.AssembleAll(os.DirFS("lua"), "src")
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range scripts {
		got, err := luaFiles.ReadFile("lua/" + file)
		if err != nil {
			t.Errorf("%s is not generated: %v", file, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("lua/%s differs from what lua/src generates: run make generate", file)
		}
	}
	for version := range releasedLibraries {
		library, err := luagen.SharedLibrary(os.DirFS("lua"), "src", version)
		if err != nil {
			t.Fatal(err)
		}
		if lib, err := ReleaseLibrary(version); err != nil || lib.Source != string(library) {
			t.Errorf("lua/%s differs from what lua/src generates: run make generate (%v)", luagen.LibraryFile(version), err)
		}
	}
	manifest, err := luagen.Build(scripts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := luaFiles.ReadFile("lua/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, manifest) {
		t.Error("lua/manifest.json differs from what lua/src generates: run make generate")
	}
}

// TestLibraryRunsTheScripts: each function of a Functions library runs its
// script's exact text. In v1 and v2 a function's body is the whole script;
// from v3 the shared prelude and the script's helpers run once per load at
// the library's top level and the body is the script after its "-- #call"
// line (TestFunctionsAgreeWithScripts runs both forms on the servers).
func TestLibraryRunsTheScripts(t *testing.T) {
	if lib := newestLibrary(t); lib.Name != "ratelua_v5" {
		t.Errorf("newestLibrary(t) is %q, want the newest release ratelua_v5", lib.Name)
	}
	for version, want := range releasedLibraries {
		lib, err := ReleaseLibrary(version)
		if err != nil {
			t.Fatal(err)
		}
		if got := luagen.SHA1([]byte(lib.Source)); got != want {
			t.Errorf("library %s has SHA1 %s, released %s: a released library must not change", lib.Name, got, want)
		}
	}
	for _, s := range Scripts() {
		lib, err := ReleaseLibrary(s.Version)
		if err != nil {
			t.Fatal(err)
		}
		if want := "#!lua name=ratelua_v" + strconv.Itoa(s.Version) + "\n"; !strings.HasPrefix(lib.Source, want) {
			t.Fatalf("library %q starts %q", lib.Name, lib.Source[:min(40, len(lib.Source))])
		}
		register := "redis.register_function('" + s.Function() + "', function(KEYS, ARGV)\n"
		body := s.Source
		if s.Version >= 3 {
			_, after, ok := strings.Cut(s.Source, "\n-- #call")
			if !ok {
				t.Fatalf("%s has no -- #call line", s)
			}
			_, body, _ = strings.Cut(after, "\n")
		}
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
	for _, s := range Scripts() {
		known[s.SHA1] = true
	}
	for _, sha := range shown {
		if !known[sha] {
			t.Errorf("the README shows SHA1 %s, which is no embedded script's", sha)
		}
	}
}

func TestManifestDescribesEveryScript(t *testing.T) {
	for _, s := range Scripts() {
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
