package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env is a getenv of the given NAME=value pairs.
func env(kv ...string) func(string) string {
	return func(name string) string {
		for _, e := range kv {
			if n, v, _ := strings.Cut(e, "="); n == name {
				return v
			}
		}
		return ""
	}
}

// TestBadSettingStopsTheStart (issue 30, M2): the service does not start
// on RATELUA_FALLBACK=NaN (before, it served, healthy, and answered every
// request Unavailable): exit 2 and a message naming the variable.
func TestBadSettingStopsTheStart(t *testing.T) {
	for _, v := range []string{"NaN", "0.0001"} {
		var out, errs bytes.Buffer
		code := run(nil, env("RATELUA_FALLBACK="+v, "REDIS_SOCKET_TYPE=tcp", "REDIS_URL=127.0.0.1:1"), &out, &errs)
		if code != 2 || !strings.Contains(errs.String(), `RATELUA_FALLBACK="`+v+`"`) {
			t.Errorf("RATELUA_FALLBACK=%s: exit %d, %q; want 2 and the variable named", v, code, errs.String())
		}
	}
}

// TestCheckReadsTheSettings (issue 30, M1): check refuses, as the server
// does, a reference rule that RATELUA_FALLBACK rounds down to 0, naming
// the file and line, and refuses a bad setting.
func TestCheckReadsTheSettings(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 10}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := run([]string{"check", dir}, env("RATELUA_FALLBACK=0.05"), &out, &errs); code != 1 || !strings.Contains(errs.String(), "a.yaml:4: the fallback share 0.05 (RATELUA_FALLBACK) of requests_per_unit 10 rounds down to 0") {
		t.Errorf("check with RATELUA_FALLBACK=0.05: exit %d, %q %q; want 1 and a.yaml:4 named", code, out.String(), errs.String())
	}
	errs.Reset()
	if code := run([]string{"check", dir}, env("RATELUA_FALLBACK=NaN"), &out, &errs); code != 2 || !strings.Contains(errs.String(), "RATELUA_FALLBACK") {
		t.Errorf("check with RATELUA_FALLBACK=NaN: exit %d, %q; want 2 naming the variable", code, errs.String())
	}
	out.Reset()
	if code := run([]string{"check", dir}, env("RATELUA_FALLBACK=0.1"), &out, &errs); code != 0 || !strings.Contains(out.String(), "1 rules, OK") {
		t.Errorf("check with RATELUA_FALLBACK=0.1: exit %d, %q", code, out.String())
	}
}
