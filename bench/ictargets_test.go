package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestTargetVerdicts: a target's cell is met at or below its limit; above
// it, out of reach when the job's minimum row is at or above the limit
// too, else MISSED with the minimum's ratio; a ratio over another row
// (sliding_window's) applies in its workload only.
func TestTargetVerdicts(t *testing.T) {
	row := func(name, group, job string, figures ...float64) icResult {
		perCall := make([]float64, len(icWorkloads))
		for w := range perCall {
			perCall[w] = figures[w%len(figures)]
		}
		return icResult{c: contender{name: name, group: group, job: job, short: "peer"}, perCall: perCall}
	}
	tb := rowName(newestVersion("token_bucket"), rowTokenBucket1)
	sw3 := rowName(newestVersion("sliding_window"), "sliding_window, 3 limits")
	s := icServer{kind: "redis", results: []icResult{
		// workloads: met; out of reach; MISSED; out of reach (the minimum
		// exactly at the limit)
		row(tb, groupRatelua, jobTokenBucket1, 80, 90, 90, 90),
		row(minBucketWhole, groupMinimum, jobTokenBucket1, 70, 86, 80, 85),
		row("peer", groupPeer, jobTokenBucket1, 100),
		row("dearer peer", groupPeer, jobTokenBucket1, 200),
		row(sw3, groupRatelua, "", 50, 50, 80, 50),
		row(rowName(comparedVersion, "sliding_window, 3 limits"), groupRatelua, "", 100),
	}}
	targets := icTargets()
	want := map[int]string{0: "0.80 met", 1: "0.90 out of reach (minimum 0.86)", 2: "0.90 **MISSED** (minimum 0.80)", 3: "0.90 out of reach (minimum 0.85)"}
	for w, cell := range want {
		if got := s.verdict(targets[0], w); got != cell {
			t.Errorf("token_bucket in workload %d: %q, want %q", w, got, cell)
		}
	}
	var window icTarget
	for _, target := range targets {
		if target.row == "sliding_window, 3 limits" {
			window = target
		}
	}
	if got := s.verdict(window, denied); got != "0.80 met" {
		t.Errorf("sliding_window denied: %q, want 0.80 met", got)
	}
	if got := s.verdict(window, 0); got != "" {
		t.Errorf("sliding_window fresh keys: %q, want no cell", got)
	}
	if got := s.verdict(targets[2], 0); got != "" {
		t.Errorf("ar1, not counted: %q, want no cell", got)
	}
	var b strings.Builder
	s.targetTable(&b)
	line := fmt.Sprintf("| v%d token_bucket, 1 limit <= 0.85 x the cheapest peer | 0.80 met | 0.90 out of reach (minimum 0.86) |", newestVersion("token_bucket"))
	if !strings.Contains(b.String(), line) {
		t.Errorf("table:\n%s", b.String())
	}
}
