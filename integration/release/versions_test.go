package release

import (
	"strings"
	"testing"
)

func TestCheckVersionsPassesAConsistentTree(t *testing.T) {
	_, mods := findSample(t, sample())
	if err := CheckVersions(mods, "v0.1.0"); err != nil {
		t.Errorf("CheckVersions: %v", err)
	}
}

func TestCheckVersionsNamesEachProblem(t *testing.T) {
	for _, tc := range []struct {
		name, file, gomod, version, want string
	}{
		{"another version", "ad/go.mod", "module example.com/r/ad\n\nreplace example.com/r => ../\n\nrequire example.com/r v0.0.0-00010101000000-000000000000\n", "v0.1.0",
			"ad/go.mod: requires example.com/r v0.0.0-00010101000000-000000000000, want v0.1.0"},
		{"no replace", "ad/go.mod", "module example.com/r/ad\n\nrequire example.com/r v0.1.0\n", "v0.1.0",
			"ad/go.mod: requires example.com/r with no replace => .."},
		{"replace elsewhere", "ad/go.mod", "module example.com/r/ad\n\nreplace example.com/r => ../tests\n\nrequire example.com/r v0.1.0\n", "v0.1.0",
			"ad/go.mod: its go.mod replaces example.com/r by ../tests , want .."},
		{"released requires unreleased", "ad/go.mod", "module example.com/r/ad\n\nreplace example.com/r/tests => ../tests\n\nrequire example.com/r/tests v0.1.0\n", "v0.1.0",
			"ad/go.mod: a released module requires example.com/r/tests, which is not released"},
		{"no such module", "ad/go.mod", "module example.com/r/ad\n\nrequire example.com/r/gone v0.1.0\n", "v0.1.0",
			"ad/go.mod: requires example.com/r/gone, which is no module of the tree"},
		{"not a version", "", "", "0.1.0", `"0.1.0" is not a release version`},
		{"a prerelease", "", "", "v0.1.0-rc.1", `"v0.1.0-rc.1" is not a release version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := sample()
			if tc.file != "" {
				files[tc.file] = tc.gomod
			}
			_, mods := findSample(t, files)
			err := CheckVersions(mods, tc.version)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckVersions = %v, want an error holding %q", err, tc.want)
			}
		})
	}
}

func TestCheckVersionsReportsEveryModule(t *testing.T) {
	files := sample()
	files["ad/go.mod"] = strings.Replace(files["ad/go.mod"], "v0.1.0", "v0.0.9", 1)
	files["tests/go.mod"] = strings.Replace(files["tests/go.mod"], "example.com/r/ad v0.1.0", "example.com/r/ad v0.1.1", 1)
	_, mods := findSample(t, files)
	err := CheckVersions(mods, "v0.1.0")
	for _, want := range []string{"ad/go.mod: requires example.com/r v0.0.9", "tests/go.mod: requires example.com/r/ad v0.1.1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckVersions = %v, want an error holding %q", err, want)
		}
	}
}

func TestRelTo(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"goredis", ".", ".."},
		{"ratehttp/internal/sfvtest", ".", "../../.."},
		{"integration", "goredis", "../goredis"},
		{".", "goredis", "goredis"},
		{".", ".", "."},
	} {
		if got := relTo(tc.from, tc.to); got != tc.want {
			t.Errorf("relTo(%q, %q) = %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}
