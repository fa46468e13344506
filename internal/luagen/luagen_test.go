package luagen

import (
	"fmt"
	"regexp"
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
	m, err := Build(map[string][]byte{"ar1.v5.lua": []byte("return 1")})
	if err != nil || !strings.Contains(string(m), `"sha1": "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"`) {
		t.Errorf("Build: %v\n%s", err, m)
	}
}

func TestSharedLibrary(t *testing.T) {
	fsys := fstest.MapFS{
		"src/_lib.v3.lua": {Data: []byte("local function twice(x) return 2 * x end\n")},
		"src/a.v3.lua":    {Data: []byte("-- a\n-- #include _lib.v3.lua\nlocal ONE = 1\n\n-- #call: per call\nreturn twice(ONE)\n")},
		"src/b.v3.lua":    {Data: []byte("-- b\n-- #include _lib.v3.lua\n-- #call\nreturn twice(#KEYS)\n")},
		"src/a.v1.lua":    {Data: []byte("return 1\n")},
	}
	got, err := SharedLibrary(fsys, "src", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"#!lua name=ratelua_v3\n",
		"\nlocal function twice(x) return 2 * x end\n\n-- a v3 (lua/a.v3.lua)\ndo\nlocal ONE = 1\n\nredis.register_function('ratelua_a_v3', function(KEYS, ARGV)\nreturn twice(ONE)\nend)\nend\n",
		"\n-- b v3 (lua/b.v3.lua)\ndo\nredis.register_function('ratelua_b_v3', function(KEYS, ARGV)\nreturn twice(#KEYS)\nend)\nend\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("SharedLibrary lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(string(got), "local function twice") != 1 {
		t.Errorf("the prelude is not once at the top:\n%s", got)
	}
	// Without -- #call lines: Library's form, each script whole.
	v1, err := SharedLibrary(fsys, "src", 1)
	scripts, _ := AssembleAll(fsys, "src")
	want, _ := Library(1, scripts)
	if err != nil || string(v1) != string(want) {
		t.Errorf("v1: %v\n%s", err, v1)
	}
	fsys["src/c.v3.lua"] = &fstest.MapFile{Data: []byte("-- #include _lib.v3.lua\nreturn 1\n")}
	if _, err := SharedLibrary(fsys, "src", 3); err == nil {
		t.Error("a v3 script without -- #call was accepted")
	}
	fsys["src/_other.v3.lua"] = &fstest.MapFile{Data: []byte("local y = 2\n")}
	fsys["src/c.v3.lua"] = &fstest.MapFile{Data: []byte("-- #include _other.v3.lua\n-- #call\nreturn 1\n")}
	if _, err := SharedLibrary(fsys, "src", 3); err == nil {
		t.Error("scripts including other preludes were accepted")
	}
}

func TestMacros(t *testing.T) {
	fsys := fstest.MapFS{
		"src/_lib.v1.lua": {Data: []byte("local K = 1\n-- #define add(OUT, A, B)\nOUT = A + B -- OUT.x stays\nt.A = f(A)\n-- #end\n")},
		"src/a.v1.lua": {Data: []byte("-- #include _lib.v1.lua\n-- #define twice(X)\nX = X * 2\n-- #end\n-- #call\n" +
			"if x then\n  -- #expand add(y, g(1, 2), 'a,b')\n  -- #expand twice(y)\nend\nreturn y\n")},
		"src/b.v1.lua":     {Data: []byte("-- #include _lib.v1.lua\n-- #call\n-- #expand add(y, 1)\n")},
		"src/c.v1.lua":     {Data: []byte("-- #include _lib.v1.lua\n-- #call\n-- #expand nothing(y)\n")},
		"src/d.v1.lua":     {Data: []byte("-- #define open(X)\nX = 1\n")},
		"src/e.v1.lua":     {Data: []byte("-- #include _lib.v1.lua\n-- #call\nlocal z = 1 -- #expand add(y, 1, 2)\n")},
		"src/plain.v1.lua": {Data: []byte("-- #include _lib.v1.lua\n-- #call\nreturn K\n")},
	}
	got, err := Assemble(fsys, "src", "a.v1.lua")
	want := "local K = 1\n-- #call\nif x then\n  y = g(1, 2) + 'a,b' -- y.x stays\n  t.A = f(g(1, 2))\n  y = y * 2\nend\nreturn y\n"
	if err != nil || string(got) != want {
		t.Errorf("Assemble = %q, %v\nwant %q", got, err, want)
	}
	for file, problem := range map[string]string{
		"b.v1.lua": "with 2 arguments, want 3", "c.v1.lua": "nothing, which is not defined",
		"d.v1.lua": "without its -- #end", "e.v1.lua": "not a line of its own",
	} {
		if _, err := Assemble(fsys, "src", file); err == nil || !strings.Contains(err.Error(), problem) {
			t.Errorf("%s: %v, want an error saying %q", file, err, problem)
		}
	}
	for _, f := range []string{"b", "c", "d", "e"} {
		delete(fsys, "src/"+f+".v1.lua")
	}
	lib, err := SharedLibrary(fsys, "src", 1)
	if err != nil || !strings.Contains(string(lib), "\nlocal K = 1\n") || strings.Contains(string(lib), "#define") ||
		!strings.Contains(string(lib), "  y = g(1, 2) + 'a,b' -- y.x stays\n") {
		t.Errorf("SharedLibrary: %v\n%s", err, lib)
	}
}

// TestMarkerOnNewVersionsOnly: from FirstMarkedVersion on, a generated
// script's first line and its library's second say it is generated; an
// older version's text (released, pinned by SHA1) is left as it was.
func TestMarkerOnNewVersionsOnly(t *testing.T) {
	old, next := FirstMarkedVersion-1, FirstMarkedVersion
	fsys := fstest.MapFS{}
	for _, v := range []int{old, next} {
		fsys[fmt.Sprintf("src/_p.v%d.lua", v)] = &fstest.MapFile{Data: []byte("local x = 1\n")}
		fsys[fmt.Sprintf("src/a.v%d.lua", v)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("-- a v%d\n-- #include _p.v%d.lua\n-- #call\nreturn x\n", v, v))}
	}
	all, err := AssembleAll(fsys, "src")
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`^-- Code generated .* DO NOT EDIT\.$`)
	oldText, nextText := string(all[fmt.Sprintf("a.v%d.lua", old)]), string(all[fmt.Sprintf("a.v%d.lua", next)])
	if want := fmt.Sprintf("-- a v%d\nlocal x = 1\n-- #call\nreturn x\n", old); oldText != want {
		t.Errorf("v%d = %q, want %q (no marker)", old, oldText, want)
	}
	first, rest, _ := strings.Cut(nextText, "\n")
	if !marker.MatchString(first) || !strings.Contains(first, fmt.Sprintf("lua/src/a.v%d.lua", next)) || rest != fmt.Sprintf("-- a v%d\nlocal x = 1\n-- #call\nreturn x\n", next) {
		t.Errorf("v%d = %q, want the marker naming its source, then the script", next, nextText)
	}
	for _, v := range []int{old, next} {
		lib, err := SharedLibrary(fsys, "src", v)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(lib), "\n")
		if !strings.HasPrefix(lines[0], "#!lua name=") || marker.MatchString(lines[1]) != (v >= FirstMarkedVersion) {
			t.Errorf("library v%d starts %q: the marker belongs on line 2 from v%d on", v, lines[:2], FirstMarkedVersion)
		}
	}
}
