package core

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
	"github.com/ratelua/ratelua/testbench"
)

// TestDryRunOnServers: on both servers, call by call, a DryRun limiter
// admits everything and reports exactly the denials of an enforcing
// limiter on the same sequence, for every script.
func TestDryRunOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		limitertest.DryRunAgainstEnforcement(t, ratelua.Rueidis(client), 500)
	})
}

// scriptCalls is how many script calls (EVALSHA, EVAL, FCALL) a node ran
// since its statistics were reset, by INFO commandstats.
func scriptCalls(t *testing.T, n *testbench.Node) int64 {
	t.Helper()
	v, err := n.Do(context.Background(), "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(fmt.Sprint(v), "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval" && name != "cmdstat_fcall") {
			continue
		}
		for _, field := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				total += n
			}
		}
	}
	return total
}
