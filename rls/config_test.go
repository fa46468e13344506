package rls

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckNamesEveryErrorWithFileAndLine: every error of a directory, in
// two files, with its line.
func TestCheckNamesEveryErrorWithFileAndLine(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n  - key: k2\n    colour: red\n")
	write(t, dir, "b.yaml", "domain: b\ndescriptors:\n  - key: x\n    rate_limit:\n      unit: second\n      requests_per_unit: ten\n      algorithm: leaky\n  - value: v\n")
	_, err := Check(dir, false, false)
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("error %v, want ErrConfig", err)
	}
	want := []string{
		"a.yaml:5: invalid rate limit unit 'fortnight'",
		"a.yaml:8: config error, unknown key 'colour'",
		"b.yaml:6: cannot unmarshal !!str `ten` into uint32",
		"b.yaml:7: algorithm 'leaky' is not one of",
		"b.yaml:8: descriptor has empty key",
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("errors do not say %q:\n%v", w, err)
		}
	}
}

// TestReloadKeepsTheLastGoodConfig: a broken file is logged and shown on
// the health endpoint; the previous rules stay in use; a fixed file loads.
func TestReloadKeepsTheLastGoodConfig(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "config")
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n")
	s := Settings{RuntimeRoot: root, RuntimeAppDirectory: "config", NearLimitRatio: 0.8}
	srv, err := NewServer(s, offline{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(true); err != nil {
		t.Fatal(err)
	}
	good := srv.Service().Config()
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: -1}\n")
	if err := srv.Reload(false); err == nil {
		t.Fatal("a broken file loaded")
	}
	if srv.Service().Config() != good {
		t.Fatal("the last good configuration was dropped")
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthcheck", nil))
	if body := rec.Body.String(); rec.Code != 200 || !strings.HasPrefix(body, "OK\n") || !strings.Contains(body, "a.yaml:4") {
		t.Fatalf("health %d %q: want OK and the failed load with its file and line", rec.Code, body)
	}
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 2}\n")
	if err := srv.Reload(false); err != nil {
		t.Fatal(err)
	}
	if c := srv.Service().Config(); c == good || c.Rules[0].Limits[0].RequestsPerUnit != 2 {
		t.Fatal("the fixed file did not load")
	}
	if h := srv.Health(); h.LastError != "" {
		t.Fatalf("health still shows %q", h.LastError)
	}
}

// TestExtensionsAreRefusedWhereTheyDoNotBelong: extension fields outside
// rate_limit, and resolution without sliding_window, are errors.
func TestExtensionsAreRefusedWhereTheyDoNotBelong(t *testing.T) {
	for _, y := range []string{
		"domain: a\ndescriptors:\n  - key: k\n    algorithm: ar1\n    rate_limit: {unit: minute, requests_per_unit: 1}\n",
		"domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1, resolution: 1s}\n",
		"domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 0, algorithm: token_bucket}\n",
		"domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 4000000000}\n",
	} {
		if _, err := Parse([]File{{Name: "x.yaml", Data: []byte(y)}}, ParseOptions{}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "x.yaml:") {
			t.Errorf("%q: error %v, want a ConfigError with its line", y, err)
		}
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
