// Package rategrpc runs ratelua limiters in front of a gRPC server: unary
// and stream server interceptors, and a Limit method that makes an
// Interceptor the Limiter of go-grpc-middleware's ratelimit interceptors.
//
// A call is limited by every Limit whose Methods match its full method
// name, keyed by the peer's address (IPv6 grouped by /64), by incoming
// metadata, by the method itself or by any KeyFunc. A denied call fails
// with codes.ResourceExhausted carrying a google.rpc.RetryInfo detail (the
// wait, rounded up to the millisecond the limiter reports) and a
// google.rpc.QuotaFailure naming the violated policy; a call no limiter
// could decide (no answer under a fail-closed limiter, or a server's error
// reply) fails with codes.Unavailable:
//
//	lim, err := rategrpc.New(rategrpc.Options{},
//		rategrpc.Limit{Limiter: perPeer, Name: "peer"},
//		rategrpc.Limit{Limiter: search, Name: "search", Methods: []string{"/shop.Catalog/Search"},
//			Key: rategrpc.ByMetadata("x-api-key")})
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(lim.Unary()), grpc.ChainStreamInterceptor(lim.Stream()))
//
// It is its own module, so that gRPC never enters ratelua's go.mod.
package rategrpc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/durfmt"
)

// KeyFunc maps a call to a limiter's event key; ok false means the limit
// does not apply to the call.
type KeyFunc func(ctx context.Context, fullMethod string) (key string, ok bool)

// ByMetadata keys by the first value of the incoming metadata name (an API
// key, a tenant); a call without it is not limited by this limit.
func ByMetadata(name string) KeyFunc {
	name = strings.ToLower(name)
	return func(ctx context.Context, _ string) (string, bool) {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get(name); len(v) > 0 && v[0] != "" {
			return v[0], true
		}
		return "", false
	}
}

// ByMethod keys by the full method name: one budget per method shared by
// every caller.
func ByMethod() KeyFunc {
	return func(_ context.Context, fullMethod string) (string, bool) { return fullMethod, true }
}

// Limit is one limiter on a server's calls.
type Limit struct {
	// Limiter decides; required.
	Limiter *ratelua.Limiter
	// Name names the limiter's policy in errors and QuotaFailure: a
	// limiter with several limits names limit i Name-<its window>, e.g.
	// "search-1s", "search-1h". Required.
	Name string
	// Methods restricts the limit to these full method names
	// ("/shop.Catalog/Search") or services ("/shop.Catalog/"); empty means
	// every call.
	Methods []string
	// Key maps a call to the event key; nil means the peer's address.
	Key KeyFunc
	// Cost is the number of events a call counts for; nil means 1, below 1
	// the call is free under this limit.
	Cost func(ctx context.Context, fullMethod string) int64
}

// Options configure an Interceptor.
type Options struct {
	// IPv4Prefix and IPv6Prefix group peer addresses into one key per
	// network: 0 means 32 and 64.
	IPv4Prefix, IPv6Prefix int
	// OnError sees every error of a limiter, whether the call then went on
	// (a FailOpen limiter without an answer) or not.
	OnError func(ctx context.Context, fullMethod string, err error)
}

// ErrInvalidConfig is wrapped by the errors of New.
var ErrInvalidConfig = errors.New("rategrpc: invalid configuration")

// Interceptor limits a server's calls. It is safe for concurrent use.
type Interceptor struct {
	limits  []limit
	v4bits  int
	v6bits  int
	onError func(context.Context, string, error)
}

type limit struct {
	Limit
	names []string // one per limit of the limiter
}

// New checks the limits and returns the interceptor; a mistake is an error
// naming it.
func New(opts Options, limits ...Limit) (*Interceptor, error) {
	if len(limits) == 0 {
		return nil, fmt.Errorf("%w: no limit", ErrInvalidConfig)
	}
	in := &Interceptor{v4bits: opts.IPv4Prefix, v6bits: opts.IPv6Prefix, onError: opts.OnError}
	if in.v4bits == 0 {
		in.v4bits = 32
	}
	if in.v6bits == 0 {
		in.v6bits = 64
	}
	if in.v4bits < 1 || in.v4bits > 32 || in.v6bits < 1 || in.v6bits > 128 {
		return nil, fmt.Errorf("%w: IPv4Prefix %d or IPv6Prefix %d out of 1..32 and 1..128", ErrInvalidConfig, opts.IPv4Prefix, opts.IPv6Prefix)
	}
	for i, l := range limits {
		switch {
		case l.Limiter == nil:
			return nil, fmt.Errorf("%w: limit %d has no Limiter", ErrInvalidConfig, i)
		case l.Name == "":
			return nil, fmt.Errorf("%w: limit %d has no Name", ErrInvalidConfig, i)
		}
		for _, m := range l.Methods {
			if !strings.HasPrefix(m, "/") {
				return nil, fmt.Errorf("%w: limit %d: method %q must start with '/' (\"/package.Service/Method\")", ErrInvalidConfig, i, m)
			}
		}
		built := limit{Limit: l}
		for j := range l.Limiter.Limits() {
			name := l.Name
			if l.Limiter.Limits() > 1 {
				_, window := l.Limiter.Quota(j)
				name += "-" + durfmt.Short(window)
			}
			built.names = append(built.names, name)
		}
		in.limits = append(in.limits, built)
	}
	return in, nil
}

// Unary returns the unary server interceptor.
func (in *Interceptor) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := in.decide(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// Stream returns the stream server interceptor: a stream is one call,
// decided when it opens.
func (in *Interceptor) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := in.decide(ss.Context(), info.FullMethod); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

// Limit decides the call of ctx (its method from grpc.Method; outside a
// server call the method is "", which only Limits without Methods match)
// and returns the
// status error of a denial or nil: the Limiter interface of
// github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit.
// That package's interceptors answer ResourceExhausted with their own
// message, which quotes this error's, and drop its details: use Unary and
// Stream for RetryInfo.
func (in *Interceptor) Limit(ctx context.Context) error {
	method, _ := grpc.Method(ctx)
	return in.decide(ctx, method)
}

// decide asks every limit that applies, in order; the first that denies
// ends the call.
func (in *Interceptor) decide(ctx context.Context, method string) error {
	for i := range in.limits {
		l := &in.limits[i]
		if !l.applies(method) {
			continue
		}
		key, ok := "", true
		if l.Key == nil {
			key = in.peerKey(ctx)
		} else {
			key, ok = l.Key(ctx, method)
		}
		if !ok {
			continue
		}
		n := int64(1)
		if l.Cost != nil {
			if n = l.Cost(ctx, method); n < 1 {
				continue
			}
		}
		res, err := l.Limiter.AllowN(ctx, key, n)
		if err != nil && in.onError != nil {
			in.onError(ctx, method, err)
		}
		if err != nil && !res.Allowed {
			return status.Error(codes.Unavailable, "rategrpc: the rate limiter could not decide this call")
		}
		if err == nil && !res.Allowed {
			return denied(l, res, n)
		}
	}
	return nil
}

// applies reports whether the limit covers method.
func (l *limit) applies(method string) bool {
	if len(l.Methods) == 0 {
		return true
	}
	for _, m := range l.Methods {
		if m == method || (strings.HasSuffix(m, "/") && strings.HasPrefix(method, m)) {
			return true
		}
	}
	return false
}

// denied is the ResourceExhausted status of a denial, with RetryInfo
// unless the call can never pass, and QuotaFailure.
func denied(l *limit, res ratelua.Result, cost int64) error {
	name := l.Name
	if res.Limit >= 0 && res.Limit < len(l.names) {
		name = l.names[res.Limit]
	}
	var st *status.Status
	var details []protoadapt.MessageV1
	if res.RetryAfter < 0 {
		st = status.New(codes.ResourceExhausted, fmt.Sprintf("rategrpc: policy %s: this call costs %d, more than the policy allows: it can never pass", strconv.Quote(name), cost))
	} else {
		st = status.New(codes.ResourceExhausted, fmt.Sprintf("rategrpc: policy %s: retry in %v", strconv.Quote(name), res.RetryAfter))
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(res.RetryAfter)})
	}
	details = append(details, &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject: "policy:" + name, Description: fmt.Sprintf("%d remaining", res.Remaining),
	}}})
	if with, err := st.WithDetails(details...); err == nil {
		st = with
	}
	return st.Err()
}

// peerKey is the key of the call's peer address, grouped by the prefix
// lengths; a peer that is not an IP address (a Unix socket, an in-memory
// listener) is its address string.
func (in *Interceptor) peerKey(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "unknown"
	}
	s := p.Addr.String()
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return s
	}
	addr := ap.Addr().WithZone("").Unmap()
	bits := in.v6bits
	if addr.Is4() {
		bits = in.v4bits
	}
	if bits == addr.BitLen() {
		return addr.String()
	}
	return netip.PrefixFrom(addr, bits).Masked().String()
}
