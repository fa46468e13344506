package core

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// crossLimits are, per script, its own limits in ms: with one limit and
// with two (the layouts differ); concurrency takes one limit only.
var crossLimits = map[string][][]string{
	ratelua.SlidingWindow: {{"5", "60000", "1000"}, {"5", "60000", "1000", "10", "3600000", "60000"}},
	ratelua.AR1:           {{"5", "2000", "1000"}, {"5", "2000", "1000", "10", "1500", "60000"}},
	ratelua.ZSetLog:       {{"5", "60000"}, {"5", "60000", "10", "3600000"}},
	ratelua.TokenBucket:   {{"5", "1", "1000"}, {"5", "1", "1000", "10", "1", "60000"}},
	ratelua.Concurrency:   {{"5", "60000"}},
}

// crossUntold reports whether lua/README.md ("A key holding another
// script's state") documents that a v6 reader cannot tell the writer's
// state from its own: the strings of ar1 and token_bucket, and
// sliding_window v5's hash read by v6.
func crossUntold(writer, reader string) bool {
	str := map[string]bool{ratelua.AR1: true, ratelua.TokenBucket: true}
	return str[writer] && str[reader] || writer == ratelua.SlidingWindow && reader == ratelua.SlidingWindow
}

// TestCrossStateOnServers (issue 30, L2): every v5 and v6 state of the
// five scripts, written by its own script on the server's clock, then
// every v6 and newest (the Go API's default) script of sliding_window,
// ar1, zset_log and token_bucket called on it by EVAL (an event in mode 1 and a decision, with each of
// its limit layouts): the key is byte-identical after (DUMP) or the call
// is refused with "ERR ratelua: KEYS[1] holds ..." and the key unchanged,
// except where lua/README.md says the type cannot tell. Before, a hash,
// sorted set or string of another script failed with a raw WRONGTYPE.
func TestCrossStateOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		key := "cross:{state}"
		for _, writer := range []string{ratelua.SlidingWindow, ratelua.AR1, ratelua.ZSetLog, ratelua.TokenBucket, ratelua.Concurrency} {
			for _, version := range []int{5, 6} {
				w, err := ratelua.NewRegistry().Lookup(writer, version)
				if err != nil {
					t.Fatal(err)
				}
				for _, wlim := range crossLimits[writer] {
					for _, reader := range []string{ratelua.SlidingWindow, ratelua.AR1, ratelua.ZSetLog, ratelua.TokenBucket} {
						if writer == reader && (version == 6 || reader == ratelua.ZSetLog) {
							continue // its own layout (zset_log v5 and v6 share one)
						}
						for _, rv := range []string{"v6", "newest"} {
							src := scriptV6(t, reader)
							if rv == "newest" {
								src = scriptNewest(t, reader)
							}
							for _, rlim := range crossLimits[reader] {
								for _, count := range []string{"1", "0"} {
									client.Do(ctx, client.B().Del().Key(key).Build())
									if err := eval(ctx, client, w.Source, key, append([]string{"2", "ms", "", "0"}, wlim...)...).Error(); err != nil {
										t.Fatalf("%s writing its state: %v", w, err)
									}
									before := dump(ctx, t, client, key)
									if before == "" {
										t.Fatalf("%s wrote no state", w)
									}
									err := eval(ctx, client, src, key, append([]string{count, "ms", "", "1"}, rlim...)...).Error()
									after := dump(ctx, t, client, key)
									what := w.String() + " (" + strings.Join(wlim, " ") + ") read by " + reader + " " + rv + " (" + strings.Join(rlim, " ") + "), eventCount " + count
									switch {
									case err != nil && !strings.Contains(err.Error(), "ratelua: KEYS[1] holds "):
										t.Errorf("%s: refused with %q, want ERR ratelua: KEYS[1] holds ...", what, err)
									case err != nil && before != after:
										t.Errorf("%s: refused, but the key changed", what)
									case err == nil && before != after && !crossUntold(writer, reader):
										t.Errorf("%s: the key changed", what)
									}
								}
							}
						}
					}
				}
			}
		}
	})
}
