package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua"
)

func TestScriptsJSONIsTheManifest(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "..", "lua", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := cli(t, "scripts", "--json")
	r.wantCode(t, exitOK)
	if r.stdout != string(want) {
		t.Errorf("scripts --json differs from lua/manifest.json (%d bytes, want %d)", len(r.stdout), len(want))
	}
}

func TestScriptsSourceIsTheScript(t *testing.T) {
	scripts := ratelua.Scripts()
	if len(scripts) == 0 {
		t.Fatal("no embedded scripts")
	}
	for _, s := range scripts {
		file := filepath.Join("..", "..", "lua", s.Name+".v"+strconv.Itoa(s.Version)+".lua")
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, arg := range []string{s.Name + "@" + strconv.Itoa(s.Version), s.Name + "@v" + strconv.Itoa(s.Version)} {
			r := cli(t, "scripts", "--source", arg)
			r.wantCode(t, exitOK)
			if r.stdout != string(want) {
				t.Errorf("scripts --source %s differs from %s", arg, file)
			}
		}
	}
}

func TestScriptsTable(t *testing.T) {
	r := cli(t, "scripts")
	r.wantCode(t, exitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "NAME VERSION SHA1 LIMIT COST" {
		t.Errorf("header %q", lines[0])
	}
	scripts := ratelua.Scripts()
	if len(lines) != 1+len(scripts) {
		t.Fatalf("%d lines for %d scripts:\n%s", len(lines), len(scripts), r.stdout)
	}
	for i, s := range scripts {
		f := strings.Fields(lines[1+i])
		if f[0] != s.Name || f[1] != strconv.Itoa(s.Version) || f[2] != s.SHA1 {
			t.Errorf("line %q, want %s %d %s", lines[1+i], s.Name, s.Version, s.SHA1)
		}
		if !strings.Contains(lines[1+i], strings.Join(s.Limit, " ")) {
			t.Errorf("line %q lacks the limit fields %v", lines[1+i], s.Limit)
		}
	}
	if !strings.Contains(r.stdout, "HMGET, HSET of one field, PEXPIRE") {
		t.Errorf("no sliding_window cost:\n%s", r.stdout)
	}
}
