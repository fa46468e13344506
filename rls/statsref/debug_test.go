package statsref

import (
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/testbench"
)

// get returns the body of a service's debug endpoint path, failing the
// test unless it answers 200.
func (s *service) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(s.debug) + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: status %d", s.name, path, resp.StatusCode)
	}
	return string(b)
}

// sortedLines is text's lines, sorted (the reference prints its
// configuration in its maps' order).
func sortedLines(text string) []string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	sort.Strings(lines)
	return lines
}

// TestDebugPortAgainstReference (issue 33, statistics): both services'
// debug ports (DEBUG_HOST, DEBUG_PORT) list the same endpoints, and
// /rlconfig prints the same lines for the configuration in use, with
// this module's configuration and with the six of the answers'
// comparison (rls/reference/testdata/config: values, wildcards, nested
// levels, shadow and quota mode, unlimited rules, every unit); pprof and
// /stats answer.
func TestDebugPortAgainstReference(t *testing.T) {
	for _, dir := range []string{"testdata/config", "../reference/testdata/config"} {
		t.Run(dir, func(t *testing.T) {
			p := startPairIn(t, dir, backend{kind: testbench.Redis}, nil, nil, "USE_STATSD=false")
			if a, b := p.ref.get(t, "/"), p.ours.get(t, "/"); a != b {
				t.Errorf("the debug endpoints: the reference\n%s\nratelua-rls\n%s", a, b)
			}
			a, b := sortedLines(p.ref.get(t, "/rlconfig")), sortedLines(p.ours.get(t, "/rlconfig"))
			if strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Errorf("/rlconfig: the reference\n%s\nratelua-rls\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
			}
			if len(a) < 5 {
				t.Errorf("/rlconfig: %d lines, want the configuration's rules", len(a))
			}
			for _, path := range []string{"/debug/pprof/", "/stats"} {
				if body := p.ours.get(t, path); body == "" {
					t.Errorf("ratelua-rls %s: empty", path)
				}
			}
			t.Logf("%d rules printed alike", len(a))
		})
	}
}
