package reference

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/testbench"
)

// envoyPairs are n request/stream-end pairs as Envoy sends them with two
// rate limits on a route: at request time a check (the descriptor's
// hits_addend 0, or the request's 1 for an estimate of one), and when the
// stream ends (apply_on_stream_done) the actual cost, 0 to 6, as the
// descriptor's hits_addend or the request's (a Lua filter's
// envoy.ratelimit.hits_addend; 0 there means 1), on the hits domain's
// tenant (10 a minute) and small (1 an hour) rules, seeded.
func envoyPairs(seed uint64, n int) []*pb.RateLimitRequest {
	rng := rand.New(rand.NewPCG(seed, 31))
	var reqs []*pb.RateLimitRequest
	for range n {
		var dsc *rlpb.RateLimitDescriptor
		if rng.IntN(4) == 0 {
			dsc = d(fmt.Sprintf("small=s%d", rng.IntN(2))).proto()
		} else {
			dsc = d(fmt.Sprintf("tenant=stream%d", rng.IntN(4))).proto()
		}
		check := &pb.RateLimitRequest{Domain: "hits", Descriptors: []*rlpb.RateLimitDescriptor{dsc}}
		if rng.IntN(3) == 0 {
			check.HitsAddend = 1
		} else {
			check.Descriptors = []*rlpb.RateLimitDescriptor{{Entries: dsc.Entries, HitsAddend: wrapperspb.UInt64(0)}}
		}
		actual := uint64(rng.IntN(7))
		done := &pb.RateLimitRequest{Domain: "hits", Descriptors: []*rlpb.RateLimitDescriptor{{Entries: dsc.Entries}}}
		if rng.IntN(2) == 0 {
			done.Descriptors[0].HitsAddend = wrapperspb.UInt64(actual)
		} else {
			done.HitsAddend = uint32(actual)
		}
		reqs = append(reqs, check, done)
	}
	return reqs
}

// marked is request k of envoyPairs as ratelua-rls is sent it: every
// other stream end carries the ratelua.charge entry (service.ChargeKey),
// which the reference knows not (it would match no rule), and which
// changes nothing on a reference rule.
func marked(req *pb.RateLimitRequest, k int) *pb.RateLimitRequest {
	if k%4 != 1 {
		return req
	}
	out := proto.Clone(req).(*pb.RateLimitRequest)
	out.Descriptors[0].Entries = append(out.Descriptors[0].Entries, &rlpb.RateLimitDescriptor_Entry{Key: "ratelua.charge", Value: "true"})
	return out
}

// TestStreamDoneAgainstReference (issue 31): Envoy's pattern of a check
// at request time and a second ShouldRateLimit with the actual cost when
// the stream ends (apply_on_stream_done), sent to envoyproxy/ratelimit
// and ratelua-rls, each on its own server (redis-server and
// valkey-server), ratelua-rls on the reference's counters (the default)
// and on its own (RATELUA_SHARE_REFERENCE_COUNTERS=false): every answer
// (the stream end's too, which Envoy ignores) and the statistics agree.
// The costs are counted whole even above what remains, as the
// reference's INCRBY: the stream seeds charges answered OVER_LIMIT and
// checks denied after them (the debt), both counted. Every other stream
// end reaches ratelua-rls with the ratelua.charge entry (marked), which
// changes nothing on reference rules.
func TestStreamDoneAgainstReference(t *testing.T) {
	bins, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	for i, run := range []struct {
		name string
		kind testbench.Kind
		env  []string
	}{
		{"shared-redis", testbench.Redis, nil},
		{"shared-valkey", testbench.Valkey, nil},
		{"own-redis", testbench.Redis, []string{"RATELUA_SHARE_REFERENCE_COUNTERS=false"}},
		{"own-valkey", testbench.Valkey, []string{"RATELUA_SHARE_REFERENCE_COUNTERS=false"}},
	} {
		t.Run(run.name, func(t *testing.T) {
			refRedis := testbench.StartSingle(t, testbench.Options{Kind: run.kind})
			ourRedis := testbench.StartSingle(t, testbench.Options{Kind: run.kind})
			s := newSession(t, func() (*service, *service) {
				flush(t, refRedis, ourRedis)
				return startService(t, "reference", bins["reference"], "testdata/config", refRedis.Addr, false, run.env...),
					startService(t, "ratelua-rls", bins["ratelua-rls"], "testdata/config", ourRedis.Addr, false, run.env...)
			})
			seed := uint64(3100 + i)
			reqs := envoyPairs(seed, 60)
			var deniedChecks, deniedCharges int
			s.run(unit{name: "stream-done", domains: []string{"hits"}, n: len(reqs), run: func(ref, ours *service) string {
				deniedChecks, deniedCharges = 0, 0
				ctx := context.Background()
				for k, req := range reqs {
					var a, b string
					var code pb.RateLimitResponse_Code
					ok := sameSecond(func() {
						cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
						defer cancel()
						resp, err := ref.client.ShouldRateLimit(cctx, req)
						code, a = resp.GetOverallCode(), answer(resp, err)
						b = answer(ours.client.ShouldRateLimit(cctx, marked(req, k)))
					})
					if !ok {
						return fmt.Sprintf("request %d", k)
					}
					if a != b {
						t.Fatalf("request %d differs (seed %d)\nrequest: %s\nreference:   %s\nratelua-rls: %s", k, seed, prototext.Format(req), a, b)
					}
					if code == pb.RateLimitResponse_OVER_LIMIT {
						if k%2 == 0 {
							deniedChecks++
						} else {
							deniedCharges++
						}
					}
				}
				return ""
			}})
			n, rules := s.finish()
			if deniedChecks == 0 || deniedCharges == 0 {
				t.Errorf("%d checks and %d stream-end charges answered OVER_LIMIT: the stream does not go into debt", deniedChecks, deniedCharges)
			}
			t.Logf("%d requests (%d checks denied, %d charges over the limit), every answer the same; the statistics of %d rules the same; %d restarts", n, deniedChecks, deniedCharges, rules, s.restarts)
			reportCases(fmt.Sprintf("reference comparison, apply_on_stream_done pattern (%s): %d requests agree, statistics of %d rules agree%s", run.name, n, rules, s.restartNote()))
		})
	}
}
