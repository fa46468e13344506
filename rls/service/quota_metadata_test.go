package service

import (
	"context"
	"encoding/json"
	"testing"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/testbench"
)

const quotaConfig = `
domain: q
descriptors:
  - key: plain
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: quota
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
`

// TestQuotaModeSetting (issue 33 row 3): QUOTA_MODE=true answered OVER_LIMIT
// where the reference says OK. With Options.QuotaMode, a descriptor of a
// rule without quota_mode, over its limit, is OK with its limit and
// remaining 0 and no reset, and the request is OK; without it, the same
// requests are denied.
func TestQuotaModeSetting(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		for _, quota := range []bool{false, true} {
			svc, _, _ := setupKind(t, kind, quotaConfig, Options{QuotaMode: quota})
			req := &pb.RateLimitRequest{Domain: "q", Descriptors: []*rlpb.RateLimitDescriptor{desc("plain", "u")}}
			for i := range 4 {
				resp, err := svc.ShouldRateLimit(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				over := i >= 2
				st := resp.Statuses[0]
				switch {
				case over && !quota:
					if resp.OverallCode != pb.RateLimitResponse_OVER_LIMIT || st.Code != pb.RateLimitResponse_OVER_LIMIT {
						t.Errorf("QuotaMode=false, request %d: %v, want OVER_LIMIT", i, resp)
					}
				case over && quota:
					if resp.OverallCode != pb.RateLimitResponse_OK || st.Code != pb.RateLimitResponse_OK || st.LimitRemaining != 0 ||
						st.CurrentLimit.GetRequestsPerUnit() != 2 || st.DurationUntilReset != nil {
						t.Errorf("QuotaMode=true, request %d: %v, want OK with the limit 2, 0 remaining and no reset", i, resp)
					}
				default:
					if resp.OverallCode != pb.RateLimitResponse_OK || st.LimitRemaining != uint32(1-i) {
						t.Errorf("QuotaMode=%v, request %d: %v, want OK with %d remaining", quota, i, resp, 1-i)
					}
				}
			}
		}
	})
}

// TestDynamicMetadata (issue 33 row 3): RESPONSE_DYNAMIC_METADATA was
// dropped from every answer. With Options.DynamicMetadata the response
// carries the reference's struct: the domain, each descriptor's entries,
// own limit and hits_addend, the request's hits_addend, the indexes
// quota mode answered OK over their limit, and whether a rule in play
// has quota_mode; without it, none.
func TestDynamicMetadata(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind testbench.Kind) {
		svc, _, _ := setupKind(t, kind, quotaConfig, Options{DynamicMetadata: true})
		quota := desc("quota", "u")
		quota.HitsAddend = wrapperspb.UInt64(2) // over its limit of 1 at once
		over := &rlpb.RateLimitDescriptor{Entries: desc("plain", "v").Entries, Limit: &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: 3}}
		req := &pb.RateLimitRequest{Domain: "q", HitsAddend: 1, Descriptors: []*rlpb.RateLimitDescriptor{desc("plain", "u"), quota, over, desc("none", "x")}}
		resp, err := svc.ShouldRateLimit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.OverallCode != pb.RateLimitResponse_OK {
			t.Fatalf("overall %v, want OK (the quota descriptor does not deny)", resp.OverallCode)
		}
		md := resp.GetDynamicMetadata().AsMap()
		descs, _ := md["descriptors"].([]any)
		if len(descs) != 4 {
			t.Fatalf("metadata %v: want 4 descriptors", md)
		}
		first, _ := descs[0].(map[string]any)
		second, _ := descs[1].(map[string]any)
		third, _ := descs[2].(map[string]any)
		got, _ := json.Marshal(map[string]any{
			"domain": md["domain"], "hitsAddend": md["hitsAddend"], "violations": md["quotaModeViolations"], "enabled": md["quotaModeEnabled"],
			"first": first["entries"], "firstHasHits": first["hitsAddend"] != nil, "secondHits": second["hitsAddend"], "thirdHasLimit": third["limit"] != nil,
		})
		want := `{"domain":"q","enabled":true,"first":["plain=u"],"firstHasHits":false,"hitsAddend":1,"secondHits":2,"thirdHasLimit":true,"violations":[1]}`
		if string(got) != want {
			t.Errorf("metadata %s\nwant       %s\nwhole: %v", got, want, md)
		}

		plain, _, _ := setupKind(t, kind, quotaConfig, Options{})
		resp, err = plain.ShouldRateLimit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.DynamicMetadata != nil {
			t.Errorf("without DynamicMetadata: metadata %v, want none", resp.DynamicMetadata)
		}
	})
}

// TestNoConfigurationIsUnavailable (issue 33 row 4): before any
// configuration is in use, a request is refused with the reference's
// message, "no rate limit configuration loaded", as Unavailable (the
// reference sends Unknown), and nothing is sent to the server.
func TestNoConfigurationIsUnavailable(t *testing.T) {
	cc := &counting{Client: offline{}}
	svc, err := New(Options{Client: cc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "q", Descriptors: []*rlpb.RateLimitDescriptor{desc("plain", "u")}})
	if st := status.Convert(err); st.Code() != codes.Unavailable || st.Message() != "no rate limit configuration loaded" {
		t.Errorf("no configuration: %v, want Unavailable %q", err, "no rate limit configuration loaded")
	}
	if n := cc.runs.Load() + cc.batches.Load(); n != 0 {
		t.Errorf("%d calls sent without a configuration", n)
	}
}
