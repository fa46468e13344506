package manifest

import "testing"

func TestParseFileName(t *testing.T) {
	for file, want := range map[string]struct {
		name    string
		version int
		ok      bool
	}{
		"sliding_window.v1.lua":  {"sliding_window", 1, true},
		"ar1.v12.lua":            {"ar1", 12, true},
		"a.v1.lua":               {"a", 1, true},
		"_prelude.v1.lua":        {},
		"Ar1.v1.lua":             {},
		"ar1.v0.lua":             {},
		"ar1.v01.lua":            {},
		"ar1.v1.lua.bak":         {},
		"ar1.vx.lua":             {},
		"ar-1.v1.lua":            {},
		".v1.lua":                {},
		"ar1.v1234567890.lua":    {},
		"ratelua_v1.library.lua": {},
	} {
		name, version, ok := ParseFileName(file)
		if name != want.name || version != want.version || ok != want.ok {
			t.Errorf("ParseFileName(%q) = %q, %d, %v; want %q, %d, %v", file, name, version, ok, want.name, want.version, want.ok)
		}
	}
}

func TestNames(t *testing.T) {
	if LibraryName(2) != "ratelua_v2" || FunctionName("ar1", 2) != "ratelua_ar1_v2" || LibraryFile(3) != "ratelua_v3.library.lua" {
		t.Error(LibraryName(2), FunctionName("ar1", 2), LibraryFile(3))
	}
	if SHA1([]byte("return 1")) != "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" {
		t.Error(SHA1([]byte("return 1")))
	}
}
