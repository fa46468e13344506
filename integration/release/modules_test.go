package release

import (
	"strings"
	"testing"
)

func TestFindListsEveryGoModRootFirst(t *testing.T) {
	_, mods := findSample(t, sample())
	var got []string
	for _, m := range mods {
		s := m.Rel + "=" + m.Path
		if !m.Released {
			s += " (not released)"
		}
		got = append(got, s)
	}
	want := "." + "=example.com/r, ad=example.com/r/ad, tests=example.com/r/tests (not released)"
	if strings.Join(got, ", ") != want {
		t.Errorf("Find = %s, want %s", strings.Join(got, ", "), want)
	}
	if r := Released(mods); len(r) != 2 || r[1].Rel != "ad" {
		t.Errorf("Released = %v, want the root and ad", r)
	}
}

func TestFindRefusesANestedModuleOutOfPlace(t *testing.T) {
	files := sample()
	files["ad/go.mod"] = "module example.com/other\n"
	_, err := Find(writeTree(t, files))
	if err == nil || !strings.Contains(err.Error(), `ad/go.mod: module path "example.com/other", want "example.com/r/ad"`) {
		t.Errorf("Find = %v, want an error naming ad/go.mod and both paths", err)
	}
}

func TestFindNeedsARootModule(t *testing.T) {
	files := sample()
	delete(files, "go.mod")
	if _, err := Find(writeTree(t, files)); err == nil || !strings.Contains(err.Error(), "has no go.mod") {
		t.Errorf("Find = %v, want an error saying the root has no go.mod", err)
	}
}

func TestTagsNameEveryReleasedModule(t *testing.T) {
	_, mods := findSample(t, sample())
	if got := strings.Join(Tags(mods, "v0.1.0"), " "); got != "v0.1.0 ad/v0.1.0" {
		t.Errorf("Tags = %s, want v0.1.0 ad/v0.1.0", got)
	}
}

// TestNotBuiltModulesAreReleasedButNotImported: a module marked NotBuilt
// is released (tagged, in the proxy, fetched) but none of its packages is
// in the consumer program.
func TestNotBuiltModulesAreReleasedButNotImported(t *testing.T) {
	files := sample()
	files["ad/go.mod"] = NotBuilt + " (a test tool)\n" + files["ad/go.mod"]
	_, mods := findSample(t, files)
	if r := Released(mods); len(r) != 2 || r[1].Rel != "ad" || r[1].Built || !r[0].Built {
		t.Fatalf("Released = %+v, want the root (built) and ad (released, not built)", r)
	}
	pkgs, err := Packages(mods)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, "example.com/r/ad") {
			t.Errorf("package %s of a NotBuilt module is in the consumer program", p.ImportPath)
		}
	}
	if len(pkgs) == 0 {
		t.Error("no package of the root")
	}
}
