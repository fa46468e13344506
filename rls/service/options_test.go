package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/rls/stats"
	"github.com/ratelua/ratelua/testbench"
)

const denyConfig = `
domain: d
descriptors:
  - key: a
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: b
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: z
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: s
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: q
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: o
    descriptors:
      - key: p
        rate_limit: {unit: hour, requests_per_unit: 4}
`

// denyStream is a seeded stream of requests on denyConfig: 1 to 3
// descriptors of few values each, hits_addend absent, 0, 1 or more at
// request and descriptor level, and now and then a descriptor's own limit
// (2 or 5 an hour, sharing the count of the rule with its entries).
func denyStream(seed uint64, n int) []*pb.RateLimitRequest {
	r := rand.New(rand.NewPCG(seed, 7))
	keys := []string{"a", "b", "z", "s", "q", "o"}
	reqs := make([]*pb.RateLimitRequest, n)
	for i := range reqs {
		req := &pb.RateLimitRequest{Domain: "d", HitsAddend: []uint32{0, 0, 1, 2, 3}[r.IntN(5)]}
		for range 1 + r.IntN(3) {
			k := keys[r.IntN(len(keys))]
			var dd *rlpb.RateLimitDescriptor
			if k == "o" {
				dd = desc("o", "x", "p", fmt.Sprint(r.IntN(2)))
			} else {
				dd = desc(k, fmt.Sprint(r.IntN(3)))
			}
			if r.IntN(3) == 0 {
				dd.HitsAddend = wrapperspb.UInt64([]uint64{0, 1, 2, 4}[r.IntN(4)])
			}
			if k == "a" && r.IntN(8) == 0 {
				dd.Limit = &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: []uint32{2, 5}[r.IntN(2)], Unit: typev3.RateLimitUnit_HOUR}
			}
			req.Descriptors = append(req.Descriptors, dd)
		}
		reqs[i] = req
	}
	return reqs
}

// describe is a response in a form two can be compared in.
func describe(resp *pb.RateLimitResponse, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	var b strings.Builder
	b.WriteString(resp.GetOverallCode().String())
	for _, s := range resp.GetStatuses() {
		fmt.Fprintf(&b, " [%s %d/%s rem=%d reset=%d]", s.GetCode(), s.GetCurrentLimit().GetRequestsPerUnit(), s.GetCurrentLimit().GetUnit(), s.GetLimitRemaining(), s.GetDurationUntilReset().GetSeconds())
	}
	return b.String()
}

// TestDenyCacheIsExact: a service with the deny cache and one without,
// each on its own server, answer a seeded stream (with a step of the
// clock that moves the per-second rule to a new window) request by
// request the same, and count the same statistics, while the cached
// service asks its server less. Both read one clock, which stands still
// for each request: they see one time whatever the load of the machine
// (before, a request that straddled a second failed the test).
func TestDenyCacheIsExact(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		var at time.Time
		clock := func() time.Time { return at }
		plain, cached := mustStats(t), mustStats(t)
		a, nodeA, _ := setupKind(t, kind, denyConfig, Options{Stats: plain, Clock: clock})
		b, nodeB, _ := setupKind(t, kind, denyConfig, Options{Stats: cached, DenyCache: 100, Clock: clock})
		ctx := context.Background()
		var step time.Duration
		for i, req := range denyStream(uint64(len(kind)), 300) {
			if i == 150 {
				step += time.Second
			}
			at = time.Now().Add(step)
			x, y := describe(a.ShouldRateLimit(ctx, req)), describe(b.ShouldRateLimit(ctx, req))
			if x != y {
				t.Fatalf("request %d: %v\nwithout the cache: %s\nwith it:           %s", i, req, x, y)
			}
		}
		sa, sb := plain.Snapshot(), cached.Snapshot()
		local := uint64(0)
		for rule, m := range sb {
			local += m[stats.OverLimitWithLocalCache]
			for _, name := range stats.Names()[:5] {
				if sa[rule][name] != m[name] {
					t.Errorf("%s %s: %d without the cache, %d with it", rule, name, sa[rule][name], m[name])
				}
			}
		}
		if len(sa) != len(sb) {
			t.Errorf("rules counted: %v without the cache, %v with it", plain.Keys(), cached.Keys())
		}
		ca, cb := commandCalls(t, nodeA, "evalsha"), commandCalls(t, nodeB, "evalsha")
		if local == 0 || cb >= ca {
			t.Fatalf("the cache answered %d hits; the servers had %d calls without it, %d with it", local, ca, cb)
		}
		t.Logf("%d script calls without the cache, %d with it (%d hits answered locally)", ca, cb, local)
	})
}

func mustStats(t *testing.T) *stats.Stats {
	t.Helper()
	s, err := stats.New(0.8, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOptionsKeepOneRoundTrip: with the deny cache, the fallback and
// FailOpen on, five descriptors of reference and extension rules are
// still one round trip; with the server gone, the fallback decides a
// reference rule on its share of the limit.
func TestOptionsKeepOneRoundTrip(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		svc, node, cc := setupKind(t, kind, extensionConfig, Options{DenyCache: 10, Fallback: 0.5, FailOpen: true, Clock: frozenClock()})
		ctx := context.Background()
		req := &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{
			desc("user", "u1"), desc("ip", "1.2.3.4"), desc("path", "/a"), desc("client", "c"), desc("plain", "p"),
		}}
		if _, err := svc.ShouldRateLimit(ctx, req); err != nil { // loads the scripts
			t.Fatal(err)
		}
		if _, err := node.Do(ctx, "CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
		cc.runs.Store(0)
		cc.batches.Store(0)
		resp, err := svc.ShouldRateLimit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.OverallCode != pb.RateLimitResponse_OK || resp.Statuses[4].LimitRemaining != 3 {
			t.Fatalf("response %v, want OK and 3 left of plain's 5", resp)
		}
		if got := commandCalls(t, node, "evalsha"); got != 5 {
			t.Errorf("EVALSHA calls on the server: %d, want 5", got)
		}
		if cc.batches.Load() != 1 || cc.runs.Load() != 0 {
			t.Errorf("round trips: %d batches and %d single calls, want 1 batch", cc.batches.Load(), cc.runs.Load())
		}

		// The server gone: plain (5 a minute, 2 used) falls back to 2 a
		// minute in this process, counted from 0.
		if err := node.Kill(); err != nil {
			t.Fatal(err)
		}
		var codes []string
		for range 3 {
			resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{desc("plain", "p")}})
			if err != nil {
				t.Fatalf("with the fallback: %v", err)
			}
			codes = append(codes, fmt.Sprintf("%s/%d", resp.OverallCode, resp.Statuses[0].LimitRemaining))
		}
		if want := "OK/1 OK/0 OVER_LIMIT/0"; strings.Join(codes, " ") != want {
			t.Fatalf("while the server is gone: %v, want %s", codes, want)
		}
	})
}

// TestFailOpen: with the server gone and FailOpen, every descriptor is
// admitted, counted within its limit, and the request is no error.
func TestFailOpen(t *testing.T) {
	counters := mustStats(t)
	svc, node, _ := setupKind(t, testbench.Redis, extensionConfig, Options{FailOpen: true, Stats: counters})
	if err := node.Kill(); err != nil {
		t.Fatal(err)
	}
	resp, err := svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{desc("plain", "p"), desc("user", "u")}})
	if err != nil || resp.OverallCode != pb.RateLimitResponse_OK {
		t.Fatalf("fail open: %v, %v; want OK", resp, err)
	}
	for _, rule := range []string{"api.plain", "api.user"} {
		if got := counters.Snapshot()[rule]; got[stats.WithinLimit] != 1 || got[stats.TotalHits] != 1 || got[stats.NearLimit] != 0 {
			t.Errorf("statistics of %s %v, want 1 hit within", rule, got)
		}
	}
}
