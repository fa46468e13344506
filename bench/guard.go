package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// The regression guard (guard_test.go, run by make test): a row or two
// per script on its newest version, on both servers under callgrind, in one
// workload, against the committed baseline baselineFile. Instructions are
// counted, not timed, so the guard holds on a busy machine.

// baselineFile holds the guard's figures: instructions per decision by
// server family and row.
const baselineFile = "testdata/instructions.json"

// baselineUpdate is the command that rewrites baselineFile (from the
// repository's root).
const baselineUpdate = "make instructions-baseline"

// guardTolerance is how far above its baseline a row may go: 3%.
const guardTolerance = 0.03

// guardWorkload is the guard's workload: a few calls per key (the first
// one on a fresh key), the figure.
const guardWorkload = 1

// guardRows are the names of the guard's rows (without the version), each
// on its script's newest version: one per script, and the paths issue 35's
// later work made cheaper (the multi-limit paths of token_bucket and ar1,
// zset_log's reserve + settle, whose settle forgets the id), so that none
// of them grows back unseen.
var guardRows = []struct{ script, row string }{
	{"token_bucket", rowTokenBucket1},
	{"token_bucket", "token_bucket, 3 limits"},
	{"ar1", rowAR1One},
	{"ar1", "ar1, 3 limits"},
	{"zset_log", "zset_log, max 100"},
	{"zset_log", "zset_log, max 100, reserve + settle"},
	{"sliding_window", "sliding_window, 3 limits"},
	{"concurrency", "concurrency, acquire + release"},
}

// guardContenders finds the guard's rows among the contenders.
func guardContenders() ([]contender, error) {
	all := rateluaContenders()
	var out []contender
	for _, g := range guardRows {
		name := rowName(newestVersion(g.script), g.row)
		found := false
		for _, c := range all {
			if c.name == name {
				out, found = append(out, c), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("guard: no contender %q", name)
		}
	}
	return out, nil
}

// baseline is baselineFile's content: kind -> row -> instructions per
// decision.
type baseline map[testbench.Kind]map[string]float64

func readBaseline(path string) (baseline, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	var bl baseline
	if err := json.Unmarshal(b, &bl); err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	return bl, nil
}

func (bl baseline) write(path string) error {
	b, err := json.MarshalIndent(bl, "", "  ")
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// check compares a row's figure with its baseline: an error when it is
// missing or more than guardTolerance above it.
func (bl baseline) check(kind testbench.Kind, row string, got float64) error {
	want, ok := bl[kind][row]
	if !ok || want <= 0 {
		return fmt.Errorf("%s %s: %.0f instructions per decision, and no baseline; update it with: %s", kind, row, got, baselineUpdate)
	}
	if got > want*(1+guardTolerance) {
		return fmt.Errorf("%s %s: %.0f instructions per decision, %.1f%% above the baseline's %.0f (more than %.0f%%); if that is meant, update the baseline with: %s",
			kind, row, got, 100*(got/want-1), want, 100*guardTolerance, baselineUpdate)
	}
	return nil
}

// measureGuard counts each of cs in the guard's workload on a server of
// kind under callgrind.
func measureGuard(ctx context.Context, kind testbench.Kind, cs []contender) (map[string]float64, error) {
	ic, err := startIC(ctx, kind)
	if err != nil {
		return nil, err
	}
	defer ic.Close()
	out := map[string]float64{}
	for _, c := range cs {
		res, err := ic.measureRow(ctx, c, []int{guardWorkload})
		if err != nil {
			return nil, err
		}
		out[c.name] = res.perCall[guardWorkload]
	}
	return out, nil
}

// swapClient is a ratelua.Client that runs another script text in place
// of one: the guard's planted regression, a copy of a script with one
// command more, driven by the limiter as the script it copies.
type swapClient struct {
	ratelua.Client
	from, to ratelua.Script // from's SHA1 and source are replaced by to's
}

func (s swapClient) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	switch {
	case call.Command == "EVALSHA" && call.Script == s.from.SHA1:
		call.Script = s.to.SHA1
	case call.Command == "EVAL" && call.Script == s.from.Source:
		call.Script = s.to.Source
	}
	return s.Client.Run(ctx, call, reply)
}

// withExtraCall is the source of a script with one more command, run on
// every call: redis.call(cmd, KEYS[1]) after the header's comments.
func withExtraCall(src, cmd string) string {
	lines := strings.SplitAfter(src, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "--") {
		i++
	}
	extra := fmt.Sprintf("redis.call('%s', KEYS[1])\n", cmd)
	return strings.Join(lines[:i], "") + extra + strings.Join(lines[i:], "")
}

// sortedRows lists a baseline's rows of kind, sorted.
func (bl baseline) sortedRows(kind testbench.Kind) []string {
	var rows []string
	for r := range bl[kind] {
		rows = append(rows, r)
	}
	sort.Strings(rows)
	return rows
}
