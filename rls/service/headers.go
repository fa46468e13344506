package service

import (
	"strconv"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratelua/ratelua/rls/config"
)

// ietfHeaders are the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers for the descriptor that decided:
// every limit of its rule as a policy (q the quota, w the window in
// seconds), and the deciding limit's available quota r and t, the seconds
// until the status says more is available: on a denial when a retry is
// admitted, else when the window resets.
//
//	RateLimit-Policy: "api.user";q=10;w=1, "api.user.1";q=1000;w=3600
//	RateLimit: "api.user.1";r=0;t=1800
func ietfHeaders(sl *slot, st *pb.RateLimitResponse_DescriptorStatus) []*core.HeaderValue {
	r := sl.rule
	name := r.Name
	if name == "" {
		name = r.Key
	}
	policies := make([]string, len(r.Limits))
	decided := 0
	for i, l := range r.Limits {
		policies[i] = policyItem(name, i, l)
		if l.RequestsPerUnit == st.CurrentLimit.RequestsPerUnit && l.Unit == st.CurrentLimit.Unit && decided == 0 {
			decided = i
		}
	}
	if sl.job != nil && !sl.job.d.reference && sl.job.out.Limit >= 0 && sl.job.out.Limit < len(r.Limits) {
		decided = sl.job.out.Limit
	}
	t := st.GetDurationUntilReset().GetSeconds()
	return []*core.HeaderValue{
		{Key: "RateLimit-Policy", Value: strings.Join(policies, ", ")},
		{Key: "RateLimit", Value: policyName(name, decided) + ";r=" + strconv.FormatUint(uint64(st.LimitRemaining), 10) + ";t=" + strconv.FormatInt(t, 10)},
	}
}

// policyName is the sf-string naming limit i of a rule.
func policyName(name string, i int) string {
	if i > 0 {
		name += "." + strconv.Itoa(i)
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(name) {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('_')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// policyItem is limit i of a rule as a member of RateLimit-Policy.
func policyItem(name string, i int, l config.Limit) string {
	return policyName(name, i) + ";q=" + strconv.FormatUint(uint64(l.RequestsPerUnit), 10) + ";w=" + strconv.FormatInt(ceilSeconds(l.Duration()), 10)
}
