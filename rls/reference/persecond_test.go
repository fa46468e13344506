package reference

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/testbench"
)

// perSecondEnv is the reference's settings of a per-second server.
func perSecondEnv(n *testbench.Node) []string {
	return []string{"REDIS_PERSECOND=true", "REDIS_PERSECOND_SOCKET_TYPE=tcp", "REDIS_PERSECOND_URL=" + n.Addr}
}

// compareKeys fails unless the reference's server ref and ratelua-rls's
// server ours hold the same counters (ratelua-rls shares the reference's
// key names by default): the same names, with the same counts. A counter
// the reference left at 0 is left out (its INCRBY 0 for a request of 0
// hits, which ratelua-rls answers with a read that writes nothing). The
// main servers compare so: none of the per-second rules' counters is on
// ratelua-rls's main server.
func compareKeys(t *testing.T, which string, ref, ours *testbench.Node) {
	t.Helper()
	a, b := counters(t, ref), counters(t, ours)
	if len(a) == 0 {
		t.Fatalf("%s: the reference's server holds no counter", which)
	}
	var differ []string
	for k, v := range a {
		if b[k] != v {
			differ = append(differ, k+": reference "+v+", ratelua-rls "+b[k])
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			differ = append(differ, k+": reference none, ratelua-rls "+v)
		}
	}
	slices.Sort(differ)
	if len(differ) > 0 {
		t.Fatalf("%s: the counters differ:\n%s", which, strings.Join(differ, "\n"))
	}
	t.Logf("%s: %d counters, the same on both", which, len(a))
}

// comparePerSecond checks the per-second servers, whose counters live a
// second (the reference's up to EXPIRATION_JITTER_MAX_SECONDS more): ours
// ran scripts, and every counter still on it is one the reference has
// too.
func comparePerSecond(t *testing.T, ref, ours *testbench.Node) {
	t.Helper()
	a, b := counters(t, ref), counters(t, ours)
	if len(a) == 0 {
		t.Fatal("REDIS_PERSECOND_URL: the reference's server holds no counter")
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Fatalf("REDIS_PERSECOND_URL: ratelua-rls's counter %s is not the reference's (%v)", k, a)
		}
	}
	v, err := ours.Do(context.Background(), "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, line := range strings.Split(v.(string), "\n") {
		for _, cmd := range []string{"evalsha", "eval", "fcall"} {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				calls += n
			}
		}
	}
	if calls == 0 {
		t.Fatal("REDIS_PERSECOND_URL: ratelua-rls ran no script on its per-second server")
	}
	t.Logf("REDIS_PERSECOND_URL: ratelua-rls ran %d scripts there; %d of its counters left, each the reference's", calls, len(b))
}

// counters are a server's keys and values, but those at 0.
func counters(t *testing.T, n *testbench.Node) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range allKeys(t, []*testbench.Node{n}) {
		v, err := n.Do(context.Background(), "GET", k)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := v.(string); s != "0" {
			out[k] = s
		}
	}
	return out
}
