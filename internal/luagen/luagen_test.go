package luagen

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestAssemble(t *testing.T) {
	fsys := fstest.MapFS{
		"src/_lib.v1.lua":    {Data: []byte("local x = 1\n")},
		"src/a.v1.lua":       {Data: []byte("-- a\n-- #include _lib.v1.lua\nreturn x\n")},
		"src/nested.v1.lua":  {Data: []byte("-- #include _nest.v1.lua\n")},
		"src/_nest.v1.lua":   {Data: []byte("-- #include _lib.v1.lua\n")},
		"src/missing.v1.lua": {Data: []byte("-- #include _none.v1.lua\n")},
		"src/notes.txt":      {Data: []byte("not a script")},
	}
	got, err := Assemble(fsys, "src", "a.v1.lua")
	if err != nil || string(got) != "-- a\nlocal x = 1\nreturn x\n" {
		t.Errorf("Assemble = %q, %v", got, err)
	}
	if _, err := Assemble(fsys, "src", "nested.v1.lua"); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("nested include: %v", err)
	}
	if _, err := Assemble(fsys, "src", "missing.v1.lua"); err == nil || !strings.Contains(err.Error(), "_none.v1.lua") {
		t.Errorf("missing include: %v", err)
	}
	delete(fsys, "src/nested.v1.lua")
	delete(fsys, "src/missing.v1.lua")
	all, err := AssembleAll(fsys, "src")
	if err != nil || len(all) != 1 || all["a.v1.lua"] == nil {
		t.Errorf("AssembleAll = %v, %v (want only a.v1.lua: includes and other files are not scripts)", all, err)
	}
}

func TestParseFileName(t *testing.T) {
	for file, want := range map[string]bool{
		"sliding_window.v1.lua": true, "ar1.v12.lua": true,
		"_prelude.v1.lua": false, "a.v0.lua": false, "A.v1.lua": false, "a.v1.txt": false, "a.lua": false,
	} {
		if _, _, ok := ParseFileName(file); ok != want {
			t.Errorf("ParseFileName(%q) ok = %v, want %v", file, ok, want)
		}
	}
	name, version, _ := ParseFileName("token_bucket.v3.lua")
	if name != "token_bucket" || version != 3 {
		t.Errorf("ParseFileName = %q, %d", name, version)
	}
}

func TestBuildNeedsAContract(t *testing.T) {
	if _, err := Build(map[string][]byte{"unknown.v1.lua": []byte("return 1")}); err == nil {
		t.Error("a script without a contract was accepted")
	}
	m, err := Build(map[string][]byte{"ar1.v1.lua": []byte("return 1")})
	if err != nil || !strings.Contains(string(m), `"sha1": "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"`) {
		t.Errorf("Build: %v\n%s", err, m)
	}
}
