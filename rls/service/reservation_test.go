package service

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/rls/stats"
	"github.com/ratelua/ratelua/testbench"
)

const reserveConfig = `
domain: llm
descriptors:
  - key: api_key
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: token_bucket}
  - key: window
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: sliding_window}
  - key: decay
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: ar1}
  - key: plain
    rate_limit: {unit: minute, requests_per_unit: 10}
`

// grpcClient serves svc over gRPC on a loopback port, as Envoy reaches it.
func grpcClient(t *testing.T, svc *Service) pb.RateLimitServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewRateLimitServiceClient(conn)
}

// envoyDescriptor is key=k with a ratelua entry (none when mark is "")
// and the descriptor's hits_addend.
func envoyDescriptor(key, mark, value string, hits uint64) *rlpb.RateLimitDescriptor {
	d := desc(key, "k")
	if mark != "" {
		d.Entries = append(d.Entries, &rlpb.RateLimitDescriptor_Entry{Key: mark, Value: value})
	}
	d.HitsAddend = wrapperspb.UInt64(hits)
	return d
}

// TestReserveSettleOverGRPC (issue 31): Envoy's two calls with a
// reservation, over gRPC. At request time the descriptor carries
// ratelua.reserve=res and the estimate as hits_addend; the answer's
// dynamic_metadata has field res, the id, when admitted (none when
// denied: Envoy then builds no stream-end descriptor). At stream end the
// descriptor carries ratelua.settle=<id> (Envoy's metadata action reading
// envoy.filters.http.ratelimit) and the actual cost: the difference is
// refunded or charged, once, however often it is sent. The checks'
// limit_remaining shows each step on a token bucket of 10 a minute.
func TestReserveSettleOverGRPC(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		start := time.Unix(1_700_000_400, 0)
		at := start
		counters, err := stats.New(0.8, nil)
		if err != nil {
			t.Fatal(err)
		}
		svc, _, _ := setupKind(t, kind, reserveConfig, Options{Stats: counters, Clock: func() time.Time { return at }})
		client := grpcClient(t, svc)
		ctx := context.Background()
		call := func(d *rlpb.RateLimitDescriptor) *pb.RateLimitResponse {
			t.Helper()
			resp, err := client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "llm", Descriptors: []*rlpb.RateLimitDescriptor{d}})
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		reserve := func(estimate uint64) (string, pb.RateLimitResponse_Code) {
			t.Helper()
			resp := call(envoyDescriptor("api_key", ReserveKey, "res", estimate))
			return resp.GetDynamicMetadata().GetFields()["res"].GetStringValue(), resp.OverallCode
		}
		remaining := func(step string, want uint32, code pb.RateLimitResponse_Code) {
			t.Helper()
			resp := call(envoyDescriptor("api_key", "", "", 0))
			if st := resp.Statuses[0]; st.Code != code || (code == pb.RateLimitResponse_OK && st.LimitRemaining != want) {
				t.Fatalf("%s: a check answers %v remaining %d, want %v remaining %d", step, st.Code, st.LimitRemaining, code, want)
			}
		}
		const ok, over = pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT
		id1, code := reserve(8)
		if code != ok || id1 == "" {
			t.Fatalf("a reserve of 8 of 10: %v, id %q; want OK and an id", code, id1)
		}
		remaining("8 reserved", 2, ok)
		if id, code := reserve(8); code != over || id != "" {
			t.Fatalf("a reserve of 8 when 2 remain: %v, id %q; want OVER_LIMIT and no id", code, id)
		}
		remaining("a reserve denied", 2, ok)
		for range 3 { // Envoy sends it once; a retry applies nothing more
			call(envoyDescriptor("api_key", SettleKey, id1, 3))
			remaining("settled with 3 of 8", 7, ok)
		}
		id2, code := reserve(7)
		if code != ok || id2 == "" || id2 == id1 {
			t.Fatalf("a reserve of 7 of 7: %v, id %q; want OK and a new id", code, id2)
		}
		call(envoyDescriptor("api_key", SettleKey, id2, 12)) // 5 over the estimate: charged into debt
		remaining("charged 5 over", 0, over)
		at = start.Add(30 * time.Second) // 5 refilled: the debt paid, none left
		remaining("30 s later", 0, over)
		at = start.Add(36 * time.Second)
		remaining("36 s later", 1, ok)
		id3, _ := reserve(1)
		remaining("1 reserved", 0, over)
		call(envoyDescriptor("api_key", SettleKey, id3, 0)) // actual 0: cancelled
		remaining("cancelled", 1, ok)
		// The statistics count the reserves' estimates (8, 8 over, 7, 1)
		// and the checks (0 hits); a settle decides nothing.
		got := counters.Snapshot()["llm.api_key"]
		if got[stats.TotalHits] != 24 || got[stats.OverLimit] != 8 || got[stats.WithinLimit] != 16 {
			t.Fatalf("statistics %v: want total_hits 24, over_limit 8, within_limit 16", got)
		}
	})
}

// TestReserveSettleBadInput: a reserve or a settle on a rule that takes
// no reservations, a reserve of 0, a bad metadata name or id: refused,
// naming what was wrong, and nothing written.
func TestReserveSettleBadInput(t *testing.T) {
	svc, node, _ := setupKind(t, testbench.Redis, reserveConfig, Options{})
	for _, c := range []struct {
		d    *rlpb.RateLimitDescriptor
		want string
	}{
		{envoyDescriptor("plain", ReserveKey, "res", 3), "rule llm.plain takes no reservations"},
		{envoyDescriptor("decay", SettleKey, "5", 3), "rule llm.decay takes no reservations"},
		{envoyDescriptor("api_key", ReserveKey, "res", 0), "needs an estimate: hits_addend 0"},
		{envoyDescriptor("api_key", ReserveKey, "a b", 3), `ratelua.reserve has value "a b"`},
		{envoyDescriptor("api_key", SettleKey, "007", 3), `ratelua.settle has value "007"`},
		{envoyDescriptor("api_key", SettleKey, "4503599627370497", 3), "want a reservation id"},
	} {
		_, err := svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "llm", Descriptors: []*rlpb.RateLimitDescriptor{desc("api_key", "first"), c.d}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want InvalidArgument naming %q", c.d.Entries, err, c.want)
		}
	}
	keys, err := node.Do(context.Background(), "DBSIZE")
	if err != nil || keys.(int64) != 0 {
		t.Fatalf("DBSIZE %v, %v: a refused request wrote", keys, err)
	}
}

// TestReserveSettleOnSlidingWindowRule: a sliding_window extension rule
// takes reservations too (its v7 script does): a reserve of 8 of 10
// leaves 2, a settle of 3 sent three times refunds 5 once, and a reserve
// past what remains is denied with no id.
func TestReserveSettleOnSlidingWindowRule(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		at := time.Unix(1_700_000_400, 0)
		svc, _, _ := setupKind(t, kind, reserveConfig, Options{Clock: func() time.Time { return at }})
		client := grpcClient(t, svc)
		call := func(d *rlpb.RateLimitDescriptor) *pb.RateLimitResponse {
			t.Helper()
			resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "llm", Descriptors: []*rlpb.RateLimitDescriptor{d}})
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		remaining := func(step string, want uint32) {
			t.Helper()
			st := call(envoyDescriptor("window", "", "", 0)).Statuses[0]
			if st.Code != pb.RateLimitResponse_OK || st.LimitRemaining != want {
				t.Fatalf("%s: a check answers %v remaining %d, want OK remaining %d", step, st.Code, st.LimitRemaining, want)
			}
		}
		resp := call(envoyDescriptor("window", ReserveKey, "res", 8))
		id := resp.GetDynamicMetadata().GetFields()["res"].GetStringValue()
		if resp.OverallCode != pb.RateLimitResponse_OK || id == "" {
			t.Fatalf("a reserve of 8 of 10: %v, id %q; want OK and an id", resp.OverallCode, id)
		}
		remaining("8 reserved", 2)
		resp = call(envoyDescriptor("window", ReserveKey, "res", 8))
		if resp.OverallCode != pb.RateLimitResponse_OVER_LIMIT || resp.GetDynamicMetadata().GetFields()["res"] != nil {
			t.Fatalf("a reserve of 8 when 2 remain: %v, metadata %v; want OVER_LIMIT and no id", resp.OverallCode, resp.GetDynamicMetadata())
		}
		for range 3 {
			call(envoyDescriptor("window", SettleKey, id, 3))
			remaining("settled with 3 of 8", 7)
		}
	})
}
