package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// guardKinds are the servers the guard runs on.
var guardKinds = []testbench.Kind{testbench.Redis, testbench.Valkey}

// needCallgrind skips the test when valgrind or the server is missing,
// except under CI=true, where it fails.
func needCallgrind(t *testing.T, kind testbench.Kind) {
	t.Helper()
	err := callgrindProvider{}.Check(context.Background(), kind)
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %v", err)
	}
	if errors.Is(err, testbench.ErrUnavailable) {
		t.Skip(err)
	}
	t.Fatal(err)
}

// TestInstructionBaseline is the regression guard: each script's
// instructions per decision on its newest version, on redis-server and
// valkey-server under callgrind, at most 3% above the committed baseline
// (testdata/instructions.json). RATELUA_WRITE_INSTRUCTIONS=1 (make
// instructions-baseline) rewrites the baseline instead.
func TestInstructionBaseline(t *testing.T) {
	cs, err := guardContenders()
	if err != nil {
		t.Fatal(err)
	}
	write := os.Getenv("RATELUA_WRITE_INSTRUCTIONS") == "1"
	bl := baseline{}
	if !write {
		if bl, err = readBaseline(baselineFile); err != nil {
			t.Fatalf("%v; write it with: %s", err, baselineUpdate)
		}
	}
	for _, kind := range guardKinds {
		t.Run(string(kind), func(t *testing.T) {
			needCallgrind(t, kind)
			got, err := measureGuard(context.Background(), kind, cs)
			if err != nil {
				t.Fatal(err)
			}
			if write {
				bl[kind] = got
				return
			}
			for _, c := range cs {
				t.Logf("%s %s: %.0f instructions per decision (baseline %.0f)", kind, c.name, got[c.name], bl[kind][c.name])
				if err := bl.check(kind, c.name, got[c.name]); err != nil {
					t.Error(err)
				}
			}
		})
	}
	if write && !t.Failed() {
		if err := bl.write(baselineFile); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", baselineFile)
	}
}

// TestInstructionGuardCatchesExtraCall shows that the guard catches a
// small regression: a copy of token_bucket's newest script with one
// command more (EXISTS on its key, on every call), driven by the same
// limiter through the same measurement, goes more than 3% above the
// baseline of the script it copies, and the guard's check says so with
// the command that updates the baseline.
func TestInstructionGuardCatchesExtraCall(t *testing.T) {
	bl, err := readBaseline(baselineFile)
	if err != nil {
		t.Fatalf("%v; write it with: %s", err, baselineUpdate)
	}
	cs, err := guardContenders()
	if err != nil {
		t.Fatal(err)
	}
	row := cs[0] // token_bucket, 1 limit
	var from ratelua.Script
	for _, s := range ratelua.Scripts() {
		if s.Name == "token_bucket" && s.Version == newestVersion("token_bucket") {
			from = s
		}
	}
	to := from
	to.Source = withExtraCall(from.Source, "EXISTS")
	sum := sha1.Sum([]byte(to.Source))
	to.SHA1 = hex.EncodeToString(sum[:])
	if to.Source == from.Source || !strings.Contains(to.Source, "redis.call('EXISTS', KEYS[1])") {
		t.Fatal("the copy has no extra call")
	}
	planted := contender{name: row.name + " with one EXISTS more", make: func(e *env) (runner, error) {
		l, err := ratelua.NewTokenBucket(swapClient{Client: ratelua.Rueidis(e.rc), from: from, to: to},
			ratelua.Options{Prefix: versionPrefix(0), Clock: e.now},
			ratelua.Bucket{Capacity: 100, RefillAmount: 100, RefillInterval: time.Minute})
		if err != nil {
			return nil, err
		}
		return rateluaRunner{l}, nil
	}}
	kind := testbench.Redis
	needCallgrind(t, kind)
	got, err := measureGuard(context.Background(), kind, []contender{planted})
	if err != nil {
		t.Fatal(err)
	}
	want := bl[kind][row.name]
	t.Logf("%s: %.0f instructions per decision, baseline of %s %.0f (+%.1f%%)", planted.name, got[planted.name], row.name, want, 100*(got[planted.name]/want-1))
	err = bl.check(kind, row.name, got[planted.name])
	if err == nil {
		t.Fatalf("the guard passed a script with one more command: %.0f against the baseline's %.0f", got[planted.name], want)
	}
	if !strings.Contains(err.Error(), baselineUpdate) {
		t.Errorf("the guard's error does not name the update command %q: %v", baselineUpdate, err)
	}
}
