package server

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/rls/settings"
)

// TestDebugEndpoints: the debug port's /rlconfig prints the configuration
// in use as the reference's does (a line per rule: its key, unit,
// requests_per_unit, shadow_mode and quota_mode; an unlimited rule's unit
// UNKNOWN), nothing before one loads, and / lists the endpoints.
func TestDebugEndpoints(t *testing.T) {
	root := t.TempDir()
	s := settings.Settings{RuntimeRoot: root, RuntimeAppDirectory: "config", NearLimitRatio: 0.8}
	srv, err := New(s, offline{}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		rec := httptest.NewRecorder()
		srv.DebugHandler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: status %d", path, rec.Code)
		}
		return rec.Body.String()
	}
	if got := get("/rlconfig"); got != "" {
		t.Fatalf("/rlconfig before a configuration: %q, want nothing", got)
	}
	if err := os.MkdirAll(s.ConfigDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := `domain: app
descriptors:
  - key: user
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 7}
  - key: plan
    value: free
    quota_mode: true
    rate_limit: {unit: day, requests_per_unit: 100}
  - key: internal
    rate_limit: {unlimited: true}
`
	if err := os.WriteFile(filepath.Join(s.ConfigDir(), "app.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(true); err != nil {
		t.Fatal(err)
	}
	want := "app.internal: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: false\n" +
		"app.plan_free: unit=DAY requests_per_unit=100, shadow_mode: false, quota_mode: true\n" +
		"app.user: unit=MINUTE requests_per_unit=7, shadow_mode: true, quota_mode: false\n"
	if got := get("/rlconfig"); got != want {
		t.Errorf("/rlconfig:\n%s\nwant\n%s", got, want)
	}
	list := get("/")
	for _, p := range []string{"/rlconfig:", "/debug/pprof/:", "/debug/pprof/profile:", "/debug/pprof/trace:", "/stats:"} {
		if !strings.Contains(list, p) {
			t.Errorf("/ does not list %s:\n%s", p, list)
		}
	}
	if !strings.Contains(get("/stats"), "memstats: ") {
		t.Errorf("/stats without the expvar memstats")
	}
}
