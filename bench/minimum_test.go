package main

import (
	"testing"

	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"
)

// TestMinimumKeysAsLong: the minimum row of each of issue 35's targets
// runs on state keys as long as those of the ratelua row it bounds, for
// every workload's event keys, so that the two differ by their scripts
// alone (a longer key costs the server more in every lookup and copy).
// Limiters are built on a client that is never called: building sends
// nothing.
func TestMinimumKeysAsLong(t *testing.T) {
	e := &env{rc: mock.NewClient(gomock.NewController(t))}
	byName := map[string]contender{}
	for _, c := range mainContenders() {
		byName[c.name] = c
	}
	keys := func(name string) []string {
		t.Helper()
		c, ok := byName[name]
		if !ok {
			t.Fatalf("no row %q", name)
		}
		r, err := c.make(e)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var out []string
		for w := range icWorkloads {
			out = append(out, r.StateKeys(icKey(w, 7))...)
		}
		return out
	}
	checked := 0
	for _, target := range icTargets() {
		if target.minimum == "" {
			continue
		}
		row := rowName(newestVersion(scriptOf(target.row)), target.row)
		ours, minimum := keys(row), keys(target.minimum)
		if len(ours) != len(minimum) {
			t.Fatalf("%s: %d state keys, its minimum %d", row, len(ours), len(minimum))
		}
		for i := range ours {
			if len(ours[i]) != len(minimum[i]) {
				t.Errorf("%s: key %q (%d bytes), its minimum's %q (%d)", row, ours[i], len(ours[i]), minimum[i], len(minimum[i]))
			}
			if ours[i] == minimum[i] {
				t.Errorf("%s and its minimum share the key %q", row, ours[i])
			}
		}
		checked++
	}
	if checked < 5 {
		t.Errorf("%d targets with a minimum row checked, want 5", checked)
	}
}
