package main

import (
	"bytes"
	"net"
	"regexp"
	"strings"
	"testing"
)

// result is one run of the command.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the command line args in-process.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// wantCode checks the exit code, and that an error is one line of stderr
// starting with "ratelua: " (and that success writes nothing to stderr).
func (r result) wantCode(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	switch {
	case code == exitOK || (code == exitFailure && r.stderr == ""):
		if r.stderr != "" {
			t.Fatalf("stderr %q, want nothing", r.stderr)
		}
	default:
		if !strings.HasPrefix(r.stderr, "ratelua: ") || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
			t.Fatalf("stderr %q, want one line starting with \"ratelua: \"", r.stderr)
		}
		if strings.HasPrefix(r.stderr, "ratelua: ratelua:") {
			t.Fatalf("stderr %q repeats the prefix", r.stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r := cli(t, args...)
		r.wantCode(t, exitOK)
		for _, c := range commands {
			if !strings.Contains(r.stdout, "  "+c.name+" ") {
				t.Errorf("%v does not list %s:\n%s", args, c.name, r.stdout)
			}
		}
	}
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			r := cli(t, args...)
			r.wantCode(t, exitOK)
			for _, want := range []string{"Usage: ratelua " + c.name, "Flags:", "  --help", "Example", "\n  ratelua " + c.name} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("%v: help lacks %q:\n%s", args, want, r.stdout)
				}
			}
		}
	}
	// Every flag of every command is documented with its value name.
	r := cli(t, "reset", "--help")
	for _, want := range []string{"--addr HOST:PORT", "--prefix PREFIX", "--unit UNIT", "--dry-run", "--timeout duration"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("reset --help lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	limits := []string{"1", "5000", "1000"}
	for _, args := range [][]string{
		{},
		{"nope"},
		{"--json"},
		{"scripts", "--bogus"},
		{"scripts", "extra"},
		{"scripts", "--json", "--source", "sliding_window@5"},
		{"scripts", "--source", "sliding_window"},
		{"scripts", "--source", "sliding_window@"},
		{"scripts", "--source", "sliding_window@0"},
		{"scripts", "--source", "sliding_window@x"},
		{"scripts", "--source", "nope@1"},
		{"scripts", "--source", "sliding_window@9"},
		{"scripts", "--source"},
		{"load"},
		{"load", "--addr", "localhost"},
		{"load", "--addr", "127.0.0.1:1", "extra"},
		{"load", "--addr", "127.0.0.1:1", "--timeout", "0s"},
		{"load", "--addr", "127.0.0.1:1", "--timeout", "soon"},
		{"load", "--functions=maybe", "--addr", "127.0.0.1:1"},
		{"call"},
		{"call", "--addr", "127.0.0.1:1"},
		{"call", "nope@1", "--addr", "127.0.0.1:1", "k", "1", "-", "0", "1", "5", "1"},
		{"call", "sliding_window@5", "--addr", "127.0.0.1:1", "k", "1", "-", "0"},
		{"call", "sliding_window@5", "k", "1", "-", "0", "1", "5000", "1000"},
		{"reset", "--addr", "127.0.0.1:1"},
		{"reset", "--addr", "127.0.0.1:1", "sliding_window@5", "k"},
		{"reset", "--addr", "127.0.0.1:1", "--prefix", "p", "sliding_window@5", "k", "1", "5000", "1000"},
		{"reset", "--addr", "127.0.0.1:1", "--prefix", ""},
		{"reset", "--addr", "127.0.0.1:1", "--prefix", "a{b}"},
		append([]string{"reset", "sliding_window@5", "k"}, limits...),
		{"demo", "--script", "nope"},
		{"demo", "extra"},
		{"demo", "--count-denied=2"},
	} {
		r := cli(t, args...)
		if r.code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, r.code, exitUsage, r.stderr)
			continue
		}
		r.wantCode(t, exitUsage)
		if r.stdout != "" {
			t.Errorf("%q: stdout %q, want nothing", args, r.stdout)
		}
		if !strings.Contains(r.stderr, "--help'") {
			t.Errorf("%q: stderr %q does not point to --help", args, r.stderr)
		}
	}
}

// TestUnreachable: a server that does not answer is exit 3, whatever the
// command.
func TestUnreachable(t *testing.T) {
	addr := closedAddr(t)
	for _, args := range [][]string{
		{"load", "--addr", addr},
		{"load", "--addr", addr, "--functions"},
		{"call", "sliding_window@5", "--addr", addr, "k", "1", "-", "0", "1", "5000", "1000"},
		{"reset", "--addr", addr, "sliding_window@5", "k", "1", "5000", "1000"},
		{"reset", "--addr", addr, "--prefix", "demo"},
		{"demo", "--addr", addr},
	} {
		r := cli(t, args...)
		r.wantCode(t, exitUnreachable)
		if !strings.Contains(r.stderr, addr) {
			t.Errorf("%q: stderr %q does not name the address", args, r.stderr)
		}
	}
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestInterspersedFlags(t *testing.T) {
	fs := newFlagSet("x", "x", "x", "x")
	addr := fs.String("addr", "", "")
	on := fs.Bool("on", false, "")
	pos, err := fs.parse(&env{}, []string{"a@1", "--addr", "h:1", "k", "-1", "", "-", "--on", "-5", "--", "--addr"})
	if err != nil {
		t.Fatal(err)
	}
	if *addr != "h:1" || !*on {
		t.Errorf("addr %q on %v", *addr, *on)
	}
	want := []string{"a@1", "k", "-1", "", "-", "-5", "--addr"}
	if strings.Join(pos, "|") != strings.Join(want, "|") {
		t.Errorf("arguments %q, want %q", pos, want)
	}
}

// TestNotRedisIsUnreachable: a port that answers, but not in RESP, is no
// server to the command: exit status 3, as for a closed port.
func TestNotRedisIsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
			conn.Close()
		}
	}()
	r := cli(t, "call", "token_bucket@5", "--addr", ln.Addr().String(), "--timeout", "2s", "k", "1", "-", "0", "1", "1", "1000")
	r.wantCode(t, exitUnreachable)
	if strings.ContainsAny(r.stderr, "\x00\x1b") || len(r.stderr) > 1024 {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestProgressBar(t *testing.T) {
	var b strings.Builder
	p := &progressBar{w: &b, label: "x"}
	p.done()
	if b.Len() != 0 {
		t.Errorf("done without updates wrote %q", b.String())
	}
	for i := range 40 {
		p.update(int64(i))
	}
	p.done()
	for _, line := range strings.Split(b.String(), "\r\033[K") {
		if line != "" && (!strings.HasPrefix(line, "x [") || strings.Count(line, "#") != 3 || !strings.Contains(line, "] ")) {
			t.Errorf("progress line %q", line)
		}
	}
}

// TestHelpNamesNewestScripts: every NAME@VERSION that the help shows is a
// script of the manifest at its newest version (an example naming a
// version that is gone answers "unknown script").
func TestHelpNamesNewestScripts(t *testing.T) {
	at := regexp.MustCompile(`\b([a-z_0-9]+)@(v?[0-9]+)\b`)
	found := 0
	for _, c := range commands {
		r := cli(t, "help", c.name)
		for _, m := range at.FindAllStringSubmatch(r.stdout, -1) {
			found++
			s, err := parseScript(c.name, m[0])
			if err != nil {
				t.Errorf("%s --help names %s: %v", c.name, m[0], err)
				continue
			}
			if want := newest(s.Name); m[0] != want {
				t.Errorf("%s --help names %s, not the newest %s", c.name, m[0], want)
			}
		}
	}
	if found == 0 {
		t.Fatal("no NAME@VERSION found in the help")
	}
	r := cli(t, "scripts", "--source", "sliding_window")
	if !strings.Contains(r.stderr, newest("sliding_window")) {
		t.Errorf("a script without its version: %q does not suggest %s", r.stderr, newest("sliding_window"))
	}
}
