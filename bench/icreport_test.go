package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpliceInstructions: a run of the instructions section alone
// replaces its part of BENCHMARKS.md and keeps the rest, or puts it after
// the title when the file has none, with the timed part's heading.
func TestSpliceInstructions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	timed := "Written by make bench.\n\n## redis 7.0.15\n\n| row |\n"
	if err := os.WriteFile(path, []byte("# Benchmarks\n\n"+timed), 0o644); err != nil {
		t.Fatal(err)
	}
	section := func(s string) string { return icBegin + "\n" + s + "\n" + icEnd + "\n" }
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := spliceInstructions(path, section("first")); err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\n" + section("first") + "\n" + timeHeading + "\n\n" + timed
	if got := read(); got != want {
		t.Fatalf("first splice:\n%s\nwant:\n%s", got, want)
	}
	if err := spliceInstructions(path, section("second")); err != nil {
		t.Fatal(err)
	}
	want = strings.Replace(want, "first", "second", 1)
	if got := read(); got != want {
		t.Fatalf("second splice:\n%s\nwant:\n%s", got, want)
	}
}

// TestPeerTableHoldsMinimumsWithAJob: the "/ cheapest peer" table holds
// ratelua's rows and the minimum rows given a job (a bound on that job's
// ratio, issue 35), with their ratio to the cheapest peer; a minimum row
// without a job, a peer and the floor are not in it.
func TestPeerTableHoldsMinimumsWithAJob(t *testing.T) {
	row := func(name, group, job, short string, figure float64) icResult {
		perCall := make([]float64, len(icWorkloads))
		for w := range perCall {
			perCall[w] = figure
		}
		return icResult{c: contender{name: name, group: group, job: job, short: short}, perCall: perCall}
	}
	s := icServer{kind: "valkey", version: "8.0.1", floor: row("floor", groupFloor, "", "", 10_000), results: []icResult{
		row("minimum without a job", groupMinimum, "", "", 30_000),
		row("minimum with a job", groupMinimum, jobTokenBucket1, "", 45_000),
		row("ratelua row", groupRatelua, jobTokenBucket1, "", 54_000),
		row("the peer", groupPeer, jobTokenBucket1, "peer", 60_000),
	}}
	var b strings.Builder
	report{instructions: []icServer{s}}.instructionSection(&b)
	out := b.String()
	_, table, ok := strings.Cut(out, "**/ cheapest peer** on")
	if !ok {
		t.Fatalf("no peer table:\n%s", out)
	}
	for _, want := range []string{"| minimum with a job | **0.75** (peer) |", "| ratelua row | **0.90** (peer) |"} {
		if !strings.Contains(table, want) {
			t.Errorf("peer table lacks %q:\n%s", want, table)
		}
	}
	for _, absent := range []string{"minimum without a job", "| the peer |", "| floor |"} {
		if strings.Contains(table, absent) {
			t.Errorf("peer table holds %q:\n%s", absent, table)
		}
	}
}

// TestMainRunKeepsInstructions: a run that did not count instructions
// (make bench SECTIONS=main) rewrites the timed part of BENCHMARKS.md and
// keeps the file's instruction section ahead of it, and its hot-key
// section at the end.
func TestMainRunKeepsInstructions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	ic := icBegin + "\n## Instructions per decision\n\ncounted\n" + icEnd + "\n"
	hot := hkBegin + "\n## Hot keys\n\nhot\n" + hkEnd + "\n"
	old := "# Benchmarks\n\n" + ic + "\n" + timeHeading + "\n\nWritten before.\n\n| old row |\n\n" + hot
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	icPart, hotPart := markedPart(path, icBegin, icEnd), hotKeysPart(path)
	if icPart != ic || hotPart != hot {
		t.Fatalf("parts read: %q, %q", icPart, hotPart)
	}
	md := "# Benchmarks\n\nWritten now.\n\n| new row |\n"
	if err := writeReport(path, md, icPart, hotPart); err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\n" + ic + "\n" + timeHeading + "\n\nWritten now.\n\n| new row |\n\n" + hot
	if got := read(t, path); got != want {
		t.Fatalf("after a main run:\n%s\nwant:\n%s", got, want)
	}
}

// TestRunKeepsSectionsItLeavesOut: the main, sweep, client and cluster
// parts of BENCHMARKS.md that a run does not measure are written again as
// the file had them; a part the run measures replaces the file's, between
// its marks.
func TestRunKeepsSectionsItLeavesOut(t *testing.T) {
	for _, name := range []string{sectionMain, sectionSweep, sectionClient, sectionCluster} {
		path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
		begin, end := sectionMarks(name)
		part := begin + "\n## " + name + "\n\nearlier\n" + end + "\n"
		if err := os.WriteFile(path, []byte("# Benchmarks\n\n"+part+"\n## Charts\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		write := func(b *strings.Builder) { b.WriteString("## " + name + "\n\nnow\n") }

		other := config{sections: []string{sectionHotKeys}}
		rep := report{cfg: other, kept: keptParts(path, other)}
		var b strings.Builder
		rep.section(&b, name, write)
		if got := b.String(); got != part+"\n" {
			t.Errorf("%s: a run without it wrote %q, want the file's part", name, got)
		}

		with := config{sections: []string{name}}
		rep = report{cfg: with, kept: keptParts(path, with)}
		b.Reset()
		rep.section(&b, name, write)
		if want := begin + "\n## " + name + "\n\nnow\n" + end + "\n\n"; b.String() != want {
			t.Errorf("%s: a run of it wrote %q, want %q", name, b.String(), want)
		}
	}
}
