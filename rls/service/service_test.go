package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/rueidis"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/testbench"
)

// counting wraps a Client and counts its round trips.
type counting struct {
	ratelua.Client
	runs, batches atomic.Int64
}

func (c *counting) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	c.runs.Add(1)
	return c.Client.Run(ctx, call, reply)
}

func (c *counting) RunBatch(ctx context.Context, calls []ratelua.Call, replies [][]int64) []error {
	c.batches.Add(1)
	return c.Client.(interface {
		RunBatch(context.Context, []ratelua.Call, [][]int64) []error
	}).RunBatch(ctx, calls, replies)
}

// forEachKind runs f as a subtest on redis-server and on valkey-server.
func forEachKind(t *testing.T, f func(t *testing.T, kind testbench.Kind)) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) { f(t, kind) })
	}
}

// setupKind starts a server of kind and a Service with the configuration
// yaml (one file), returning the service, the node and the counting
// client.
func setupKind(t *testing.T, kind testbench.Kind, yaml string, opts Options) (*Service, *testbench.Node, *counting) {
	t.Helper()
	node := testbench.StartSingle(t, testbench.Options{Kind: kind})
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	cc := &counting{Client: ratelua.Rueidis(rc)}
	opts.Client = cc
	svc, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]config.File{{Name: "test.yaml", Data: []byte(yaml)}}, config.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetConfig(c); err != nil {
		t.Fatal(err)
	}
	return svc, node, cc
}

func desc(kv ...string) *rlpb.RateLimitDescriptor {
	d := &rlpb.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlpb.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// commandCalls returns INFO commandstats' calls of cmd.
func commandCalls(t *testing.T, node *testbench.Node, cmd string) int {
	t.Helper()
	v, err := node.Do(context.Background(), "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(v.(string), "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

const extensionConfig = `
domain: api
descriptors:
  - key: user
    rate_limit:
      name: user
      unit: minute
      requests_per_unit: 10
      algorithm: sliding_window
      resolution: 1s
      limits:
        - requests_per_unit: 3
          unit: hour
  - key: ip
    rate_limit:
      unit: second
      requests_per_unit: 100
      algorithm: token_bucket
  - key: path
    rate_limit:
      unit: minute
      requests_per_unit: 5
      algorithm: zset_log
  - key: client
    rate_limit:
      unit: minute
      requests_per_unit: 5
      algorithm: ar1
  - key: plain
    rate_limit:
      unit: minute
      requests_per_unit: 5
`

// TestOneCallPerDescriptorOneRoundTrip: five descriptors on five rules of
// four algorithms are one script call each on the server, all sent in one
// round trip.
func TestOneCallPerDescriptorOneRoundTrip(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		svc, node, cc := setupKind(t, kind, extensionConfig, Options{})
		ctx := context.Background()
		req := &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{
			desc("user", "u1"), desc("ip", "1.2.3.4"), desc("path", "/a"), desc("client", "c"), desc("plain", "p"),
		}}
		// Load the scripts first, so that NOSCRIPT's EVAL does not count.
		if _, err := svc.ShouldRateLimit(ctx, req); err != nil {
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
		if resp.OverallCode != pb.RateLimitResponse_OK || len(resp.Statuses) != 5 {
			t.Fatalf("response %v", resp)
		}
		if got := commandCalls(t, node, "evalsha"); got != 5 {
			t.Errorf("EVALSHA calls on the server: %d, want 5 (one per descriptor)", got)
		}
		if got := commandCalls(t, node, "eval"); got != 0 {
			t.Errorf("EVAL calls: %d, want 0 (every decision is its script call)", got)
		}
		// The reference rule's fixed_window script counts with one INCRBY
		// and one EXPIRE, inside its EVALSHA; nothing else does.
		for _, cmd := range []string{"incrby", "expire"} {
			if got := commandCalls(t, node, cmd); got != 1 {
				t.Errorf("%s calls: %d, want 1 (the reference rule's fixed_window, inside its script call)", cmd, got)
			}
		}
		if cc.batches.Load() != 1 || cc.runs.Load() != 0 {
			t.Errorf("round trips: %d batches and %d single calls, want 1 batch", cc.batches.Load(), cc.runs.Load())
		}
	})
}

// TestNoPartialCountWhenALaterLimitDenies: a rule of 10 per minute and 3
// per hour; when the hour denies, the minute has not counted the request
// either (the state's per-limit totals, from the script's documented
// layout, stay equal).
func TestNoPartialCountWhenALaterLimitDenies(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		svc, node, _ := setupKind(t, kind, extensionConfig, Options{})
		ctx := context.Background()
		ask := func(hits uint32) *pb.RateLimitResponse {
			resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", HitsAddend: hits, Descriptors: []*rlpb.RateLimitDescriptor{desc("user", "u2")}})
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		if r := ask(3); r.OverallCode != pb.RateLimitResponse_OK || r.Statuses[0].LimitRemaining != 0 || r.Statuses[0].CurrentLimit.Unit != pb.RateLimitResponse_RateLimit_HOUR {
			t.Fatalf("3 hits: %v, want OK, 0 left of the hour limit", r)
		}
		for range 5 {
			r := ask(1)
			if r.OverallCode != pb.RateLimitResponse_OVER_LIMIT || r.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 3 {
				t.Fatalf("a hit past the hour limit: %v, want OVER_LIMIT by 3/HOUR", r)
			}
			if d := r.Statuses[0].DurationUntilReset.GetSeconds(); d < 3500 || d > 3600 {
				t.Fatalf("retry after %d s, want about an hour", d)
			}
		}
		keys, err := node.Do(ctx, "KEYS", "*")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys.([]any)) != 1 {
			t.Fatalf("keys %v, want the one state key", keys)
		}
		m, err := node.Do(ctx, "HGET", keys.([]any)[0].(string), "m")
		if err != nil {
			t.Fatal(err)
		}
		// sliding_window v6: <time>, a summary of five words, then <total>
		// <span> <newest> per limit.
		f := strings.Fields(m.(string))
		if len(f) != 12 || f[6] != "3" || f[9] != "3" {
			t.Fatalf("state %q: want both limits at 3 events (denied hits leave no count)", m)
		}
	})
}

// TestBadInput: every malformed request gets a clear gRPC error or an
// answer, never a crash.
func TestBadInput(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		svc, _, _ := setupKind(t, kind, extensionConfig, Options{})
		ctx := context.Background()
		huge := strings.Repeat("k", 1<<20)
		many := make([]*rlpb.RateLimitDescriptor, 10000)
		for i := range many {
			many[i] = desc("plain", strconv.Itoa(i))
		}
		cases := []struct {
			name string
			req  *pb.RateLimitRequest
			code codes.Code // codes.OK: an answer
			msg  string
		}{
			{"empty domain", &pb.RateLimitRequest{Descriptors: []*rlpb.RateLimitDescriptor{desc("plain", "x")}}, codes.InvalidArgument, "domain must not be empty"},
			{"no descriptors", &pb.RateLimitRequest{Domain: "api"}, codes.InvalidArgument, "descriptor list must not be empty"},
			{"hits above int64", &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{{Entries: desc("plain", "x").Entries, HitsAddend: wrapperspb.UInt64(math.MaxUint64)}}}, codes.InvalidArgument, "hits_addend"},
			{"hits 2^40", &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{{Entries: desc("user", "x").Entries, HitsAddend: wrapperspb.UInt64(1 << 40)}}}, codes.OK, ""},
			{"request hits max uint32", &pb.RateLimitRequest{Domain: "api", HitsAddend: math.MaxUint32, Descriptors: []*rlpb.RateLimitDescriptor{desc("plain", "y")}}, codes.OK, ""},
			{"1 MB key and value", &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{desc(huge, huge), desc("plain", huge)}}, codes.OK, ""},
			{"invalid UTF-8", &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{desc("plain", "\xff\xfe")}}, codes.InvalidArgument, "UTF-8"},
			{"10,000 descriptors", &pb.RateLimitRequest{Domain: "api", Descriptors: many}, codes.InvalidArgument, "10000 descriptors"},
			{"override with no unit", &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{{Entries: desc("o", "1").Entries, Limit: &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1}}}}, codes.InvalidArgument, "unit"},
			{"descriptor without entries", &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{{}}}, codes.OK, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				resp, err := svc.ShouldRateLimit(ctx, c.req)
				if got := status.Code(err); got != c.code {
					t.Fatalf("code %v (%v), want %v", got, err, c.code)
				}
				if err != nil && !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("error %q does not say %q", err, c.msg)
				}
				if err == nil && len(resp.Statuses) != len(c.req.Descriptors) {
					t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(c.req.Descriptors))
				}
			})
		}
		// A weight beyond every limit is denied by it, and counts nothing.
		resp, _ := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{{Entries: desc("user", "w").Entries, HitsAddend: wrapperspb.UInt64(1 << 40)}}})
		if resp.OverallCode != pb.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("2^40 hits: %v, want OVER_LIMIT", resp)
		}
		resp, _ = svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{desc("user", "w")}})
		if resp.OverallCode != pb.RateLimitResponse_OK || resp.Statuses[0].LimitRemaining != 2 {
			t.Fatalf("one hit after a refused 2^40: %v, want OK with 2 left", resp)
		}
	})
}

// TestIETFHeaders: the RateLimit fields name the deciding limit, and t is
// the wait the limits give.
func TestIETFHeaders(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		svc, _, _ := setupKind(t, kind, extensionConfig, Options{IETFHeaders: true})
		ctx := context.Background()
		req := &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{desc("user", "h")}}
		var resp *pb.RateLimitResponse
		for range 4 {
			var err error
			if resp, err = svc.ShouldRateLimit(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		h := map[string]string{}
		for _, v := range resp.ResponseHeadersToAdd {
			h[v.Key] = v.Value
		}
		if got, want := h["RateLimit-Policy"], `"user";q=10;w=60, "user.1";q=3;w=3600`; got != want {
			t.Errorf("RateLimit-Policy %q, want %q", got, want)
		}
		rl := h["RateLimit"]
		var tt int
		if _, err := fmt.Sscanf(rl, `"user.1";r=0;t=%d`, &tt); err != nil || tt < 3500 || tt > 3600 {
			t.Errorf("RateLimit %q, want \"user.1\";r=0;t=<about 3600>", rl)
		}
		if tt != int(resp.Statuses[0].DurationUntilReset.GetSeconds()) {
			t.Errorf("t=%d, the status says retry in %d s", tt, resp.Statuses[0].DurationUntilReset.GetSeconds())
		}
	})
}

// TestBackendDown: with the server gone, a request is a clear Unavailable
// error, not a crash.
func TestBackendDown(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		svc, node, _ := setupKind(t, kind, extensionConfig, Options{})
		if err := node.Kill(); err != nil {
			t.Fatal(err)
		}
		_, err := svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlpb.RateLimitDescriptor{desc("plain", "x")}})
		if status.Code(err) != codes.Unavailable || !errors.Is(err, err) {
			t.Fatalf("error %v, want Unavailable", err)
		}
	})
}

// offline is a Client that never answers: the server is unreachable.
type offline struct{}

// Run refuses every call.
func (offline) Run(context.Context, ratelua.Call, []int64) error {
	return fmt.Errorf("offline: %w", ratelua.ErrUnavailable)
}
