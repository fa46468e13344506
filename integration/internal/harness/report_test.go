package harness

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ratelua/ratelua/testbench"
)

var (
	redisSingle   = Server{Kind: testbench.Redis, Version: "7.0.15", Topology: "single", Provider: "process"}
	valkeyCluster = Server{Kind: testbench.Valkey, Version: "8.0.1", Topology: "cluster", Provider: "docker ratelua/servers:local"}
)

// TestReportRoundTrip: what AppendReport writes from several writers at
// once, ReadReport reads back case for case.
func TestReportRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cases")
	want := map[string]Case{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range 8 {
		var cases []Case
		for i := range 50 {
			c := Case{Suite: "core", Name: "TestX/" + string(rune('a'+w)) + "/" + strings.Repeat("n", i+1), Server: redisSingle, Result: Pass}
			if i%7 == 0 {
				c.Server, c.Result = valkeyCluster, Skip
			}
			cases = append(cases, c)
			mu.Lock()
			want[c.Name] = c
			mu.Unlock()
		}
		wg.Go(func() {
			if err := AppendReport(path, cases); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadReport(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d cases read, want %d", len(got), len(want))
	}
	for _, c := range got {
		if want[c.Name] != c {
			t.Errorf("read %+v, want %+v", c, want[c.Name])
		}
	}
}

// TestReadReportRefuses: a line that is not a case is an error naming
// its number.
func TestReadReportRefuses(t *testing.T) {
	good := Case{Suite: "cli", Name: "TestLoad/redis", Server: redisSingle, Result: Pass}.String()
	for _, bad := range []string{
		"core\tTestX\tredis 7.0.15 single (process)",
		"core\tTestX\tredis 7.0.15 single (process)\tpassed",
		"core\tTestX\tredis 7.0.15 sharded (process)\tpass",
		"core\tTestX\tredis 7.0.15 single\tpass",
		"\tTestX\tredis 7.0.15 single (process)\tpass",
	} {
		_, err := ReadReport(strings.NewReader(good + "\n" + bad + "\n"))
		if err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: error %v, want one naming line 2", bad, err)
		}
	}
}

// TestSummarize: one line per suite and server, single before cluster,
// redis before valkey, failures and skips shown when there are any.
func TestSummarize(t *testing.T) {
	redisCluster := redisSingle
	redisCluster.Topology = "cluster"
	cases := []Case{
		{"middleware", "A", valkeyCluster, Pass},
		{"core", "B", redisCluster, Pass},
		{"core", "C", redisSingle, Pass},
		{"core", "D", redisSingle, Fail},
		{"core", "E", redisSingle, Skip},
		{"core", "F", redisSingle, Pass},
		{"core", "G", valkeyCluster, Pass},
	}
	want := "core: redis 7.0.15 single (process): 2 passed, 1 failed, 1 skipped\n" +
		"core: redis 7.0.15 cluster (process): 1 passed\n" +
		"core: valkey 8.0.1 cluster (docker ratelua/servers:local): 1 passed\n" +
		"middleware: valkey 8.0.1 cluster (docker ratelua/servers:local): 1 passed\n"
	if got := Summarize(cases); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

// TestRecord: a case is recorded with the result its test ended with.
func TestRecord(t *testing.T) {
	h := New()
	t.Run("passes", func(t *testing.T) { h.Record(t, "s", "", redisSingle) })
	t.Run("skips", func(t *testing.T) {
		h.Record(t, "s", "one", redisSingle)
		t.Skip("skipped on purpose")
	})
	got := map[string]string{}
	for _, c := range h.Cases() {
		got[c.Name] = c.Result
	}
	want := map[string]string{"TestRecord/passes": Pass, "TestRecord/skips/one": Skip}
	if len(got) != len(want) || got["TestRecord/passes"] != Pass || got["TestRecord/skips/one"] != Skip {
		t.Errorf("recorded %v, want %v", got, want)
	}
}
