package reference

import (
	"context"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratelua/ratelua/testbench"
)

// TestErrorsAgainstReference (issue 33 row 4) sends both services the
// requests the reference refuses, then a request with each one's server
// killed. The pinned reference answers every error with a plain Go error,
// which gRPC sends as Unknown; ratelua-rls sends the same messages with
// the codes that say what failed: InvalidArgument for a request refused,
// Unavailable for a backend that does not answer (Envoy treats every
// error alike: failure_mode_deny decides). The test fails if either
// service's code or message moves.
func TestErrorsAgainstReference(t *testing.T) {
	bins, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	refRedis := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	ourRedis := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	ref := startService(t, "reference", bins["reference"], "testdata/config", refRedis.Addr, false)
	ours := startService(t, "ratelua-rls", bins["ratelua-rls"], "testdata/config", ourRedis.Addr, false)
	call := func(s *service, req *pb.RateLimitRequest) *status.Status {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := s.client.ShouldRateLimit(ctx, req)
		if err == nil {
			t.Fatalf("%s answered %v, want an error", s.name, resp)
		}
		return status.Convert(err)
	}
	descs := []*rlpb.RateLimitDescriptor{{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "readiness", Value: "probe"}}}}
	for _, c := range []struct {
		name, message string
		req           *pb.RateLimitRequest
	}{
		{"empty domain", "rate limit domain must not be empty", &pb.RateLimitRequest{Descriptors: descs}},
		{"no descriptors", "rate limit descriptor list must not be empty", &pb.RateLimitRequest{Domain: "basic"}},
	} {
		a, b := call(ref, c.req), call(ours, c.req)
		if a.Code() != codes.Unknown || a.Message() != c.message {
			t.Errorf("%s: the reference answered %v %q, want Unknown %q", c.name, a.Code(), a.Message(), c.message)
		}
		if b.Code() != codes.InvalidArgument || b.Message() != a.Message() {
			t.Errorf("%s: ratelua-rls answered %v %q, want InvalidArgument %q", c.name, b.Code(), b.Message(), a.Message())
		}
	}
	if err := refRedis.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := ourRedis.Kill(); err != nil {
		t.Fatal(err)
	}
	req := &pb.RateLimitRequest{Domain: "basic", Descriptors: []*rlpb.RateLimitDescriptor{{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "generic_key", Value: "foo"}}}}}
	a, b := call(ref, req), call(ours, req)
	if a.Code() != codes.Unknown {
		t.Errorf("server killed: the reference answered %v %q, want Unknown", a.Code(), a.Message())
	}
	if b.Code() != codes.Unavailable {
		t.Errorf("server killed: ratelua-rls answered %v %q, want Unavailable", b.Code(), b.Message())
	}
	t.Logf("server killed: the reference %v %q; ratelua-rls %v %q", a.Code(), a.Message(), b.Code(), b.Message())
}
