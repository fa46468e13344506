package main

import (
	"fmt"
	"slices"
	"strings"
)

// icTarget is one of issue 35's targets on the instruction counts: the
// newest version's row at most limit times the cheapest peer doing its
// job (versus ""), or times the row versus, in the workloads listed (nil:
// every workload).
type icTarget struct {
	row       string // without the version
	limit     float64
	minimum   string // the minimum row bounding the ratio, "" for none
	versus    string // a row's full name, "" for the cheapest peer
	workloads []int
}

// denied is the index in icWorkloads of the denial-heavy (login) workload.
const denied = 2

// icTargets are issue 35's targets, in the order the table shows them.
func icTargets() []icTarget {
	v := newestVersion("sliding_window")
	return []icTarget{
		{row: rowTokenBucket1, limit: 0.85, minimum: minBucketWhole},
		{row: rowTokenBucket1 + ", server clock", limit: 0.85, minimum: minBucketWhole + ", server clock (TIME)"},
		{row: rowAR1One, limit: 0.85, minimum: minDecayWhole},
		{row: rowAR1One + ", server clock", limit: 0.85, minimum: minDecayWhole + ", server clock (TIME)"},
		{row: "zset_log, max 100", limit: 0.95, minimum: minZSetNewest},
		{row: "sliding_window, 3 limits", limit: 0.8, versus: rowName(comparedVersion, "sliding_window, 3 limits"), workloads: []int{denied}},
		{row: "sliding_window, 8 limits (60 buckets each)", limit: 2, versus: rowName(v, rowWindow1), workloads: []int{denied}},
	}
}

// find is the row named name, if it was counted.
func (s icServer) find(name string) (icResult, bool) {
	for _, r := range s.results {
		if r.c.name == name {
			return r, true
		}
	}
	return icResult{}, false
}

// verdict is target t's cell in workload w: the ratio, then "met", "out
// of reach" (the minimum row's ratio is at or above the limit: no script
// doing the job under the contract meets it) or "MISSED"; "" when the
// target does not apply there or a row is missing.
func (s icServer) verdict(t icTarget, w int) string {
	if t.workloads != nil && !slices.Contains(t.workloads, w) {
		return ""
	}
	r, ok := s.find(rowName(newestVersion(scriptOf(t.row)), t.row))
	if !ok {
		return ""
	}
	var over icResult
	if t.versus != "" {
		if over, ok = s.find(t.versus); !ok {
			return ""
		}
	} else if over, ok = s.cheapestPeer(r, w); !ok {
		return ""
	}
	ratio := r.perCall[w] / over.perCall[w]
	switch {
	case ratio <= t.limit:
		return fmt.Sprintf("%.2f met", ratio)
	case t.minimum != "":
		if m, ok := s.find(t.minimum); ok {
			bound := m.perCall[w] / over.perCall[w]
			if bound >= t.limit {
				return fmt.Sprintf("%.2f out of reach (minimum %.2f)", ratio, bound)
			}
			return fmt.Sprintf("%.2f **MISSED** (minimum %.2f)", ratio, bound)
		}
	}
	return fmt.Sprintf("%.2f **MISSED**", ratio)
}

// scriptOf is the script a target row runs: the name before its first
// comma.
func scriptOf(row string) string {
	name, _, _ := strings.Cut(row, ",")
	return name
}

// targetTable writes issue 35's targets on server s: a row per target, a
// cell per workload.
func (s icServer) targetTable(b *strings.Builder) {
	fmt.Fprintf(b, "**Targets (issue 35)** on %s: the ratio in each workload, then met; out of reach (its minimum row's ratio\n", s.kind)
	b.WriteString("is at or above the target, so no script doing the job under the contract meets it); or MISSED (with the\n")
	b.WriteString("minimum's ratio when there is one: below the target, a cheaper script could meet it).\n\n| target |")
	for _, w := range icWorkloads {
		fmt.Fprintf(b, " %s |", w.name)
	}
	b.WriteString("\n|---|")
	for range icWorkloads {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, t := range icTargets() {
		over := "the cheapest peer"
		if t.versus != "" {
			over = t.versus
		}
		fmt.Fprintf(b, "| v%d %s <= %g x %s |", newestVersion(scriptOf(t.row)), t.row, t.limit, over)
		for w := range icWorkloads {
			cell := s.verdict(t, w)
			if cell == "" {
				cell = "—"
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
