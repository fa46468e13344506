package service

import (
	"context"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/testbench"
)

// chargeConfig has a rule of 5 per minute of each algorithm, and a
// reference rule.
const chargeConfig = `
domain: llm
descriptors:
  - key: fixed
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: fixed_window}
  - key: sliding
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: sliding_window}
  - key: bucket
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: token_bucket}
  - key: log
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: zset_log}
  - key: decay
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: ar1}
  - key: plain
    rate_limit: {unit: minute, requests_per_unit: 5}
`

// envoyCall is one ShouldRateLimit as Envoy sends it for one descriptor:
// request-level hits_addend (the filter state envoy.ratelimit.hits_addend)
// or per-descriptor (RateLimit.hits_addend, 0 included), and at stream end
// (apply_on_stream_done) the descriptor's ChargeKey entry.
func envoyCall(t *testing.T, svc *Service, key, value string, hits uint32, perDescriptor, charge bool) pb.RateLimitResponse_Code {
	t.Helper()
	d := desc(key, value)
	if charge {
		d.Entries = append(d.Entries, &rlpb.RateLimitDescriptor_Entry{Key: ChargeKey, Value: ChargeValue})
	}
	req := &pb.RateLimitRequest{Domain: "llm", Descriptors: []*rlpb.RateLimitDescriptor{d}}
	if perDescriptor {
		d.HitsAddend = wrapperspb.UInt64(uint64(hits))
	} else {
		req.HitsAddend = hits
	}
	resp, err := svc.ShouldRateLimit(context.Background(), req)
	if err != nil {
		t.Fatalf("%s hits %d: %v", key, hits, err)
	}
	return resp.Statuses[0].Code
}

// TestStreamDoneChargeIsCounted (issue 31): Envoy's pattern of a check at
// request time (per-descriptor hits_addend 0) and, when the stream ends, a
// second ShouldRateLimit with the actual cost as hits_addend
// (apply_on_stream_done), marked by the ChargeKey entry. For a rule of
// every algorithm and a reference rule (shared counters and ratelua's
// own), on both servers, with the cost sent per descriptor or for the
// request: a charge of 3, then one of 4 when 2 remain, is counted whole
// (7 of 5: the limit is in debt), so the next check and the next hit are
// denied. Without the charge entry an extension rule would deny the 4 and
// count nothing, and the check would pass: tokens spent and not counted.
func TestStreamDoneChargeIsCounted(t *testing.T) {
	const ok, over = pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		for _, shared := range []bool{false, true} {
			at := time.Unix(1_700_000_400, 0)
			svc, _, _ := setupKind(t, kind, chargeConfig, Options{ShareReferenceCounters: shared, Clock: func() time.Time { return at }})
			for _, key := range []string{"fixed", "sliding", "bucket", "log", "decay", "plain"} {
				for _, perDescriptor := range []bool{true, false} {
					name, value := key, "per-descriptor"
					if !perDescriptor {
						name, value = key+"/request", "request"
					}
					if shared {
						name += "/shared"
					}
					if perDescriptor {
						if c := envoyCall(t, svc, key, value, 0, true, false); c != ok {
							t.Errorf("%s: the first check: %v, want OK", name, c)
						}
					}
					if c := envoyCall(t, svc, key, value, 3, perDescriptor, true); c != ok {
						t.Errorf("%s: a charge of 3 of 5: %v, want OK", name, c)
					}
					envoyCall(t, svc, key, value, 4, perDescriptor, true) // 7 of 5; Envoy ignores the answer
					if c := envoyCall(t, svc, key, value, 0, true, false); c != over {
						t.Errorf("%s: the check after 7 of 5 were charged: %v, want OVER_LIMIT (the charge of 4 was not counted)", name, c)
					}
					if c := envoyCall(t, svc, key, value, 1, false, false); c != over {
						t.Errorf("%s: a hit after 7 of 5 were charged: %v, want OVER_LIMIT", name, c)
					}
				}
			}
			// Past two units every algorithm has forgotten the debts.
			at = at.Add(2 * time.Minute)
			for _, key := range []string{"fixed", "sliding", "bucket", "log", "decay", "plain"} {
				for _, value := range []string{"per-descriptor", "request"} {
					if c := envoyCall(t, svc, key, value, 1, false, false); c != ok {
						t.Errorf("%s %s: a hit two minutes later: %v, want OK", key, value, c)
					}
				}
			}
		}
	})
}

// TestStreamDoneDebtIsPaidOff: a token bucket of 5 per minute charged 8
// when full is 3 in debt: a check is denied until the refill has paid the
// debt and one token more (3 tokens at 36 s, one more at 48 s), so the
// whole 8 was counted, not the 5 that remained.
func TestStreamDoneDebtIsPaidOff(t *testing.T) {
	const ok, over = pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		start := time.Unix(1_700_000_400, 0)
		at := start
		svc, _, _ := setupKind(t, kind, chargeConfig, Options{Clock: func() time.Time { return at }})
		envoyCall(t, svc, "bucket", "k", 8, true, true)
		for _, step := range []struct {
			after time.Duration
			want  pb.RateLimitResponse_Code
		}{{0, over}, {12 * time.Second, over}, {36 * time.Second, over}, {47 * time.Second, over}, {48 * time.Second, ok}} {
			at = start.Add(step.after)
			if c := envoyCall(t, svc, "bucket", "k", 0, true, false); c != step.want {
				t.Errorf("a check %v after a charge of 8 of 5: %v, want %v", step.after, c, step.want)
			}
		}
	})
}

// TestChargeEntryBadInput: a ChargeKey entry of another value, or two in
// one descriptor, is refused naming it, and nothing is counted.
func TestChargeEntryBadInput(t *testing.T) {
	svc, node, _ := setupKind(t, testbench.Redis, chargeConfig, Options{})
	for _, c := range []struct {
		entries []*rlpb.RateLimitDescriptor_Entry
		want    string
	}{
		{[]*rlpb.RateLimitDescriptor_Entry{{Key: "bucket", Value: "k"}, {Key: ChargeKey, Value: "yes"}}, `ratelua.charge has value "yes"`},
		{[]*rlpb.RateLimitDescriptor_Entry{{Key: ChargeKey, Value: "true"}, {Key: "bucket", Value: "k"}, {Key: ChargeKey, Value: "true"}}, "entries 0 (ratelua.charge) and 2 (ratelua.charge)"},
	} {
		_, err := svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "llm", HitsAddend: 3,
			Descriptors: []*rlpb.RateLimitDescriptor{desc("bucket", "k"), {Entries: c.entries}}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want InvalidArgument naming %q", c.entries, err, c.want)
		}
	}
	keys, err := node.Do(context.Background(), "DBSIZE")
	if err != nil || keys.(int64) != 0 {
		t.Fatalf("DBSIZE %v, %v: a refused request wrote", keys, err)
	}
}
