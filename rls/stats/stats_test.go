package stats

import (
	"context"
	"fmt"
	"testing"

	"github.com/ratelua/ratelua"
)

// counts makes Counts from statistic names and values.
func counts(t *testing.T, kv map[string]uint64) Counts {
	t.Helper()
	var c Counts
	for name, v := range kv {
		i := -1
		for j, n := range Names() {
			if n == name {
				i = j
			}
		}
		if i < 0 {
			t.Fatalf("no statistic %q", name)
		}
		c[i] = v
	}
	return c
}

// TestReferenceCountsAsTheReference: a reference rule of 5 (near limit
// past 4, NEAR_LIMIT_RATIO 0.8), worked out by hand as the reference's
// counting does, request by request.
func TestReferenceCountsAsTheReference(t *testing.T) {
	s, err := New(0.8, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name             string
		n, before, after uint64
		shadow, local    bool
		want             map[string]uint64
	}{
		{"within", 3, 0, 3, false, false, map[string]uint64{TotalHits: 3, WithinLimit: 3}},
		{"within, past near", 2, 3, 5, false, false, map[string]uint64{TotalHits: 2, WithinLimit: 2, NearLimit: 1}},
		{"over from the limit", 1, 5, 6, false, false, map[string]uint64{TotalHits: 1, OverLimit: 1}},
		{"over across the limit", 3, 4, 7, false, false, map[string]uint64{TotalHits: 3, OverLimit: 2, NearLimit: 1}},
		{"over in shadow mode", 3, 4, 7, true, false, map[string]uint64{TotalHits: 3, OverLimit: 2, NearLimit: 1, ShadowMode: 2}},
		{"deny cache", 2, 9, 11, false, true, map[string]uint64{TotalHits: 2, OverLimit: 2, OverLimitWithLocalCache: 2}},
	} {
		if got, want := s.ReferenceCounts(c.n, c.before, c.after, 5, c.shadow, c.local), counts(t, c.want); got != want {
			t.Errorf("%s: %v, want %v (%v)", c.name, got, want, Names())
		}
	}
}

// TestExtensionNearLimitIsTheRequests: an extension rule's near_limit
// counts only the request's own hits past the near-limit threshold: on 10
// (near past 8), the hit that leaves 0 is 1 near, not 2.
func TestExtensionNearLimitIsTheRequests(t *testing.T) {
	s, err := New(0.8, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := s.ExtensionCounts(1, 10, ratelua.Result{Allowed: true, Remaining: 0}, false)
	if want := counts(t, map[string]uint64{TotalHits: 1, WithinLimit: 1, NearLimit: 1}); got != want {
		t.Fatalf("%v, want %v", got, want)
	}
	got = s.ExtensionCounts(4, 10, ratelua.Result{Allowed: false}, true)
	if want := counts(t, map[string]uint64{TotalHits: 4, OverLimit: 4, ShadowMode: 4}); got != want {
		t.Fatalf("denied in shadow mode: %v, want %v", got, want)
	}
}

// TestNamesPerRuleAreBounded: the first MaxStatNamesPerRule names of a
// rule count under their own names, every later one under the rule's
// overflow name, and the totals stay whole.
func TestNamesPerRuleAreBounded(t *testing.T) {
	s, err := New(0.8, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	one := counts(t, map[string]uint64{TotalHits: 1})
	for i := range MaxStatNamesPerRule + 10 {
		s.Add(ctx, "d.ip", fmt.Sprintf("d.ip_v%d", i), one)
	}
	s.Add(ctx, "d.ip", "d.ip_v0", one) // a name it has keeps counting there
	snap := s.Snapshot()
	if len(snap) != MaxStatNamesPerRule+1 {
		t.Fatalf("%d names, want %d and the overflow", len(snap), MaxStatNamesPerRule)
	}
	if got := snap["d.ip"+OverflowSuffix][TotalHits]; got != 10 {
		t.Errorf("overflow %d hits, want 10", got)
	}
	if got := snap["d.ip_v0"][TotalHits]; got != 2 {
		t.Errorf("d.ip_v0 %d hits, want 2", got)
	}
}

// TestStatNamesAreSanitized: as the reference's, ':' and '|' become '_',
// and so do the dots of an IPv4 address, not the others.
func TestStatNamesAreSanitized(t *testing.T) {
	for in, want := range map[string]string{
		"d.k_a:b|c":          "d.k_a_b_c",
		"d.ip_10.1.2.3":      "d.ip_10_1_2_3",
		"d.host_example.com": "d.host_example.com",
	} {
		if got := sanitizeStatName(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
