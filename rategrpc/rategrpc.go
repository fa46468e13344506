// Package rategrpc runs ratelua limiters in front of a gRPC server: unary
// and stream server interceptors, and a Limit method that makes an
// Interceptor the Limiter of go-grpc-middleware's ratelimit interceptors.
//
// A call is limited by every Limit whose Methods match its full method
// name, keyed by the client's address (the peer's, or behind
// Options.TrustedProxies the one their x-forwarded-for metadata names,
// IPv6 grouped by /64), by incoming metadata, by the method itself or by
// any KeyFunc. A denied call fails
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
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/clientaddr"
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
	// Limiter decides; required (or Semaphore).
	Limiter *ratelua.Limiter
	// Semaphore, instead of Limiter, bounds the calls in flight per key
	// (ratelua.NewConcurrency): a call holds Cost slots while its handler
	// runs (a stream: until it ends), released when the handler returns
	// or panics; the handler's context is cancelled (cause
	// ratelua.ErrLeaseLost) if the lease is lost. A denied call fails
	// with ResourceExhausted, its RetryInfo the time until the soonest
	// lease ends if none is released or renewed. The slots acquired for a
	// call go back on every path, a panic of a later limit's Key or Cost
	// included, and those of a call whose deadline passed while its
	// acquire ran are released in the background (Semaphore.AcquireN).
	// Interceptor.Limit, which cannot release, skips it.
	Semaphore *ratelua.Semaphore
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
	// Reserve, instead of Cost, makes the limit a reservation of a cost
	// known only after the work (LLM tokens, bytes streamed): the call
	// reserves the estimate it returns (ratelua.Limiter.Reserve, admitted
	// or denied as a Cost of that many), and when the handler returns (a
	// stream: when it ends) or panics, the reservation is settled with the
	// cost the handler reported by Settle, or, if it reported none, with
	// the estimate (it stays spent). An estimate below 1 makes the call
	// free under this limit. The Limiter's script must take reservations
	// (ratelua.Script.Reserves: token_bucket from v7). Interceptor.Limit,
	// which cannot settle, skips it.
	Reserve func(ctx context.Context, fullMethod string) int64
}

// Options configure an Interceptor. The zero value keys by the peer's
// address (IPv6 by /64) and trusts no proxy.
type Options struct {
	// TrustedProxies are the addresses ("10.0.0.1") and networks
	// ("10.0.0.0/8", "2001:db8::/32") of the proxies in front of the
	// server (an Envoy, a gRPC-aware load balancer). Only a call whose peer
	// is one of them has its ProxyHeader metadata read.
	TrustedProxies []string
	// ProxyHeader is the metadata the trusted proxies write the client's
	// address to: "x-forwarded-for" (the default), "forwarded" (RFC 7239,
	// parsed strictly) or "x-real-ip". The rightmost address that is not a
	// trusted proxy is the client; what is to its left was written by the
	// client and proves nothing. The rules are ratehttp's, from package
	// github.com/ratelua/ratelua/clientaddr.
	ProxyHeader string
	// IPv4Prefix and IPv6Prefix group client addresses into one key per
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
	clients *clientaddr.Resolver
	header  string // the lower-case metadata key clients reads
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
	clients, err := clientaddr.New(clientaddr.Options{TrustedProxies: opts.TrustedProxies, ProxyHeader: opts.ProxyHeader,
		IPv4Prefix: opts.IPv4Prefix, IPv6Prefix: opts.IPv6Prefix})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	in := &Interceptor{clients: clients, header: strings.ToLower(clients.Header()), onError: opts.OnError}
	for i, l := range limits {
		switch {
		case l.Limiter != nil && l.Semaphore != nil:
			return nil, fmt.Errorf("%w: limit %d has a Limiter and a Semaphore: one per Limit", ErrInvalidConfig, i)
		case l.Semaphore != nil && l.Name == "":
			return nil, fmt.Errorf("%w: limit %d has no Name", ErrInvalidConfig, i)
		case l.Semaphore != nil:
		case l.Limiter == nil:
			return nil, fmt.Errorf("%w: limit %d has no Limiter", ErrInvalidConfig, i)
		case l.Limiter.Limits() == 0:
			return nil, fmt.Errorf("%w: limit %d: its Limiter was not made by a ratelua constructor", ErrInvalidConfig, i)
		case l.Name == "":
			return nil, fmt.Errorf("%w: limit %d has no Name", ErrInvalidConfig, i)
		}
		switch {
		case l.Reserve != nil && l.Semaphore != nil:
			return nil, fmt.Errorf("%w: limit %d: a Semaphore takes no Reserve (its Cost is the slots held)", ErrInvalidConfig, i)
		case l.Reserve != nil && l.Cost != nil:
			return nil, fmt.Errorf("%w: limit %d has a Cost and a Reserve: one per Limit", ErrInvalidConfig, i)
		case l.Reserve != nil && !l.Limiter.Script().Reserves():
			return nil, fmt.Errorf("%w: limit %d has a Reserve, but its limiter's script %s takes no reservations (token_bucket does from v7)", ErrInvalidConfig, i, l.Limiter.Script())
		}
		for _, m := range l.Methods {
			if !strings.HasPrefix(m, "/") {
				return nil, fmt.Errorf("%w: limit %d: method %q must start with '/' (\"/package.Service/Method\")", ErrInvalidConfig, i, m)
			}
		}
		built := limit{Limit: l}
		if l.Semaphore != nil {
			built.names = []string{l.Name}
			in.limits = append(in.limits, built)
			continue
		}
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
		leases, held, err := in.decide(ctx, info.FullMethod, true)
		if err != nil {
			return nil, err
		}
		if len(leases) == 0 && held == nil {
			return handler(ctx, req)
		}
		ctx, end := in.holding(ctx, leases, held)
		defer end()
		return handler(ctx, req)
	}
}

// Stream returns the stream server interceptor: a stream is one call,
// decided when it opens.
func (in *Interceptor) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		leases, held, err := in.decide(ss.Context(), info.FullMethod, true)
		if err != nil {
			return err
		}
		if len(leases) == 0 && held == nil {
			return handler(srv, ss)
		}
		ctx, end := in.holding(ss.Context(), leases, held)
		defer end()
		return handler(srv, &holdingStream{ServerStream: ss, ctx: ctx})
	}
}

// holdingStream is a stream whose context ends when one of its leases is
// lost.
type holdingStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context returns the stream's context.
func (s *holdingStream) Context() context.Context { return s.ctx }

// releaseTimeout bounds the release of a call's slots.
const releaseTimeout = 5 * time.Second

// holding returns the context a call holding leases and reservations
// runs under, cancelled when a lease is lost (and carrying the
// reservations for Settle), and end, which releases the leases and
// settles the reservations (even when the caller has gone) and must be
// called when the handler returns or panics.
func (in *Interceptor) holding(ctx context.Context, leases []*ratelua.Lease, reserved *holding) (context.Context, func()) {
	held, cancel := context.WithCancelCause(ctx)
	if reserved != nil {
		held = context.WithValue(held, holdingKey{}, reserved)
	}
	done := make(chan struct{})
	for _, l := range leases {
		if !l.Local() {
			go func() {
				select {
				case <-l.Lost():
					cancel(l.Err())
				case <-done:
				}
			}()
		}
	}
	return held, func() {
		close(done)
		cancel(nil)
		in.release(ctx, leases)
		in.settle(ctx, reserved)
	}
}

// release gives back the slots a call held; a failure is OnError's (the
// slots then come back when their leases end).
func (in *Interceptor) release(ctx context.Context, leases []*ratelua.Lease) {
	if len(leases) == 0 {
		return
	}
	method, _ := grpc.Method(ctx)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for _, l := range leases {
		if err := l.Release(rctx); err != nil && in.onError != nil {
			in.onError(ctx, method, err)
		}
	}
}

// Limit decides the call of ctx (its method from grpc.Method; outside a
// server call the method is "", which only Limits without Methods match)
// and returns the status error of a denial or nil: the Limiter interface
// of github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit.
// That package's interceptors answer ResourceExhausted with a status of
// their own, without details; so that the client still gets the denial's
// RetryInfo and QuotaFailure, Limit also sets the denial's status as the
// call's grpc-status-details-bin trailer, which gRPC sends when the
// status it answers with has no details of its own (the client then reads
// the denial's code, message and details).
func (in *Interceptor) Limit(ctx context.Context) error {
	method, _ := grpc.Method(ctx)
	_, _, err := in.decide(ctx, method, false)
	if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted && len(st.Details()) > 0 {
		if raw, merr := proto.Marshal(st.Proto()); merr == nil {
			// Outside a server call there is no trailer to set: nothing lost
			// but the details.
			_ = grpc.SetTrailer(ctx, metadata.Pairs(statusDetailsKey, string(raw)))
		}
	}
	return err
}

// statusDetailsKey is the trailer gRPC carries a status's details in.
const statusDetailsKey = "grpc-status-details-bin"

// decide asks every limit that applies, in order; the first that denies
// ends the call, and the slots acquired and the reservations taken before
// it are given back. With hold, the semaphores and the reservations are
// asked too and the call's leases and reservations returned; without,
// they are skipped.
func (in *Interceptor) decide(ctx context.Context, method string, hold bool) (leases []*ratelua.Lease, held *holding, err error) {
	// decided is set on every return: a panic of a later limit's Key or
	// Cost leaves it unset, and the slots already acquired go back too.
	decided := false
	defer func() {
		if err != nil || !decided {
			in.release(ctx, leases)
			in.cancel(ctx, held)
			leases, held = nil, nil
		}
	}()
	for i := range in.limits {
		l := &in.limits[i]
		if !l.applies(method) || ((l.Semaphore != nil || l.Reserve != nil) && !hold) {
			continue
		}
		key, ok := "", true
		if l.Key == nil {
			key = in.ClientKey(ctx)
		} else {
			key, ok = l.Key(ctx, method)
		}
		if !ok {
			continue
		}
		n := int64(1)
		if l.Reserve != nil {
			if n = l.Reserve(ctx, method); n < 1 {
				continue
			}
		} else if l.Cost != nil {
			if n = l.Cost(ctx, method); n < 1 {
				continue
			}
		}
		var res ratelua.Result
		var err error
		if l.Semaphore != nil {
			var lease *ratelua.Lease
			lease, res, err = l.Semaphore.AcquireN(ctx, key, n)
			if lease != nil {
				leases = append(leases, lease)
			}
		} else if l.Reserve != nil {
			var resv *ratelua.Reservation
			resv, err = l.Limiter.Reserve(ctx, key, n)
			res = resv.Result()
			if resv.Held() {
				if held == nil {
					held = &holding{}
				}
				held.reservations = append(held.reservations, resv)
			}
		} else {
			res, err = l.Limiter.AllowN(ctx, key, n)
		}
		if err != nil && in.onError != nil {
			in.onError(ctx, method, err)
		}
		if err != nil && !res.Allowed {
			decided = true
			return leases, held, status.Error(codes.Unavailable, "rategrpc: the rate limiter could not decide this call")
		}
		if err == nil && !res.Allowed {
			decided = true
			return leases, held, denied(l, res, n)
		}
	}
	decided = true
	return leases, held, nil
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

// ClientKey returns the key of the call's client address, the default key
// of a Limit: the peer's address, or when the peer is a trusted proxy the
// rightmost address in its ProxyHeader metadata that is not a trusted
// proxy, grouped by the IPv4 and IPv6 prefix lengths: "192.0.2.1",
// "2001:db8:1:2::/64". A peer that is not an IP address (a Unix socket,
// an in-memory listener) is its address string; a call without a peer is
// "unknown".
func (in *Interceptor) ClientKey(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "unknown"
	}
	md, _ := metadata.FromIncomingContext(ctx)
	return in.clients.Key(p.Addr.String(), md.Get(in.header))
}
