package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/settings"
)

// TestCheckNamesEveryErrorWithFileAndLine: every error of a directory, in
// two files, with its line.
func TestCheckNamesEveryErrorWithFileAndLine(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n  - key: k2\n    colour: red\n")
	write(t, dir, "b.yaml", "domain: b\ndescriptors:\n  - key: x\n    rate_limit:\n      unit: second\n      requests_per_unit: ten\n      algorithm: leaky\n  - value: v\n")
	_, err := Check(dir, settings.Settings{})
	if !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("error %v, want config.ErrInvalid", err)
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

// TestCheckRefusesAShareRoundingToZero (issue 30, M1): with
// RATELUA_FALLBACK 0.05 a reference rule of 10 an hour would fall back to
// 0 (every request denied in an outage); check, the service and a reload
// refuse it with its file and line, as the limiters refuse it for an
// extension rule; 0.1 (1 of 10) loads.
func TestCheckRefusesAShareRoundingToZero(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: zero\n    rate_limit: {unit: hour, requests_per_unit: 0}\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 10}\n  - key: e\n    rate_limit: {unit: hour, requests_per_unit: 10, algorithm: token_bucket}\n")
	_, err := Check(dir, settings.Settings{Fallback: 0.05})
	want := "a.yaml:6: the fallback share 0.05 (RATELUA_FALLBACK) of requests_per_unit 10 rounds down to 0"
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	if _, err := Check(dir, settings.Settings{Fallback: 0.1}); err != nil {
		t.Fatalf("a share of 0.1 (1 of 10): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
}
