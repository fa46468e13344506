package ratehttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/clientaddr"
	"github.com/ratelua/ratelua/internal/durfmt"
)

// Limit is one limiter on a route.
type Limit struct {
	// Limiter decides; required (or Semaphore), made by a ratelua
	// constructor. A limiter with ratelua.Options.DryRun decides and
	// records every request but changes nothing a client sees: it never
	// denies, and its policies are in no header field.
	Limiter *ratelua.Limiter
	// Semaphore, instead of Limiter, bounds the requests in flight per
	// key (ratelua.NewConcurrency): a request holds Cost slots from
	// before the next handler runs until it returns or panics, whether or
	// not the client is still there; the handler's context is cancelled
	// (cause ratelua.ErrLeaseLost) if the lease is lost. A denied request
	// is answered 429 with Retry-After: the time until the soonest lease
	// ends if none is released or renewed. It has no window, so it is in
	// no RateLimit field. Give its Semaphore a Slots.Renew for requests
	// that may outlast a lease. The slots acquired for a request go back
	// on every path, a panic of a later limit's Key or Cost included, and
	// those of a client that hung up while its acquire ran are released
	// in the background (Semaphore.AcquireN).
	Semaphore *ratelua.Semaphore
	// Name names the limiter's policy in the headers and in the problem
	// body. A limiter with one limit is one policy, Name; with several,
	// limit i is the policy Name-<its window>, e.g. "login-5s" and
	// "login-1h". Required unless Names is set.
	Name string
	// Names, when set, names each limit of the limiter in order (exactly
	// Limiter.Limits() names) instead of Name. Every name must be a
	// non-empty string of printable ASCII (an RFC 9651 sf-string), unique
	// on the route.
	Names []string
	// Key maps a request to the limiter's event key; ok false means the
	// limit does not apply to the request (no user logged in, no API key):
	// pair such a limit with one keyed by the client address. Nil means
	// the client address (Middleware.ClientKey).
	Key KeyFunc
	// Cost is the number of events a request counts for (weighted
	// requests); nil means 1. A cost below 1 makes the request free under
	// this limit; a cost above a policy's quota is denied as one that can
	// never pass (429 without Retry-After), however large: costs above
	// 2^52, the most a limiter takes, are asked as 2^52.
	Cost func(r *http.Request) int64
	// Reserve, instead of Cost, makes the limit a reservation of a cost
	// known only after the work (LLM tokens, bytes sent): the request
	// reserves the estimate it returns (ratelua.Limiter.Reserve: admitted
	// or denied as a Cost of that many, with the same header fields), and
	// once the next handler returns, panics or sees its client hang up,
	// the reservation is settled with the cost the handler reported by
	// Settle, or, if it reported none, with the estimate (it stays
	// spent). An estimate below 1 makes the request free under this
	// limit. The Limiter's script must take reservations
	// (ratelua.Script.Reserves: token_bucket from v7).
	Reserve func(r *http.Request) int64
	// Exempt lists keys this limit never applies to (allow-listed clients,
	// internal users). A client address key is written as ClientKey
	// writes it: "192.0.2.1", "2001:db8:1:2::/64".
	Exempt []string
}

// Headers chooses the rate-limit header fields a Middleware sends.
type Headers int

const (
	// HeadersIETF sends RateLimit-Policy and RateLimit on every response
	// of a limited route, and Retry-After on 429.
	HeadersIETF Headers = iota
	// HeadersIETFAndLegacy adds X-RateLimit-Limit (the reported policy's
	// quota), X-RateLimit-Remaining and X-RateLimit-Reset (Unix time in
	// seconds at which the reported wait ends).
	HeadersIETFAndLegacy
	// HeadersNone sends no rate-limit field at all, not even Retry-After,
	// and the 429 body tells no wait: a login endpoint need not tell an
	// attacker how many tries are left.
	HeadersNone
)

// Options configure a Middleware. The zero value keys by the peer's
// address (IPv6 by /64), trusts no proxy, sends the IETF fields, answers a
// denied request 429 with a problem body and an unanswered limiter that
// fails closed 503.
type Options struct {
	// TrustedProxies are the addresses ("10.0.0.1") and networks
	// ("10.0.0.0/8", "2001:db8::/32") of the reverse proxies in front of
	// the service. Only a request whose peer is one of them has its
	// ProxyHeader read.
	TrustedProxies []string
	// ProxyHeader is the field the trusted proxies write the client's
	// address to: "X-Forwarded-For" (the default), "Forwarded" (RFC 7239,
	// its for= parameters) or "X-Real-IP". Name the one your proxy sets:
	// a field it passes through untouched carries whatever the client
	// wrote. The rightmost address that is not a trusted proxy is the
	// client; a value that is not an address ends the search at the proxy
	// that wrote it, and so does a Forwarded line that does not parse
	// strictly (an unbalanced quote), so that what a client wrote never
	// becomes its key. The rules are package clientaddr's, which rategrpc
	// shares.
	ProxyHeader string
	// IPv4Prefix and IPv6Prefix group client addresses into one key per
	// network: 0 means 32 (each IPv4 address) and 64 (a /64, what one
	// IPv6 host or site usually gets).
	IPv4Prefix, IPv6Prefix int
	// Headers chooses the rate-limit fields sent; HeadersIETF by default.
	Headers Headers
	// Skip exempts requests from every limit, with no header: health
	// checks, metrics.
	Skip func(r *http.Request) bool
	// Denied, if set, answers a denied request instead of the 429
	// problem body. The rate-limit fields are already set; DenialFrom on
	// the request's context tells which policy denied it and the wait.
	Denied http.Handler
	// Unavailable, if set, answers a request that a limiter could not
	// decide (an error under a fail-closed limiter, or a server's error
	// reply) instead of the 503 problem body.
	Unavailable http.Handler
	// OnError sees every error of a limiter, whether the request then
	// passed (a FailOpen limiter without an answer) or not.
	OnError func(r *http.Request, err error)
	// Clock gives the time of X-RateLimit-Reset; nil means time.Now.
	Clock func() time.Time
}

// ErrInvalidConfig is wrapped by the errors of New.
var ErrInvalidConfig = errors.New("ratehttp: invalid configuration")

// Middleware limits the requests of the handlers it wraps. It is safe for
// concurrent use.
type Middleware struct {
	limits      []limit
	clients     *clientaddr.Resolver
	headers     Headers
	policy      string // the RateLimit-Policy value
	skip        func(*http.Request) bool
	denied      http.Handler
	unavailable http.Handler
	onError     func(*http.Request, error)
	clock       func() time.Time
}

// limit is a Limit ready to serve.
type limit struct {
	limiter  *ratelua.Limiter
	sem      *ratelua.Semaphore
	dryRun   bool // decided and recorded, never shown to the client
	key      KeyFunc
	cost     func(*http.Request) int64
	reserve  func(*http.Request) int64
	exempt   map[string]struct{}
	policies []policy // one per limit of the limiter
}

// policy is one limit of a limiter as the headers name it.
type policy struct {
	name   string
	item   string // the name serialized as an sf-string
	quota  int64
	window time.Duration
}

// New checks the options and the limits and returns the middleware. Every
// mistake it can see is an error naming it: no limit, a missing limiter, a
// policy name the header fields cannot carry or that two limits share, an
// address or network in TrustedProxies that does not parse, an unknown
// ProxyHeader, a prefix length out of range.
func New(opts Options, limits ...Limit) (*Middleware, error) {
	if len(limits) == 0 {
		return nil, fmt.Errorf("%w: no limit", ErrInvalidConfig)
	}
	m := &Middleware{
		headers: opts.Headers, skip: opts.Skip, denied: opts.Denied, unavailable: opts.Unavailable,
		onError: opts.OnError, clock: opts.Clock,
	}
	if m.clock == nil {
		m.clock = time.Now
	}
	if opts.Headers < HeadersIETF || opts.Headers > HeadersNone {
		return nil, fmt.Errorf("%w: Headers %d is not one of HeadersIETF, HeadersIETFAndLegacy, HeadersNone", ErrInvalidConfig, opts.Headers)
	}
	if err := m.setAddressing(opts); err != nil {
		return nil, err
	}
	seen := map[string]int{}
	var items []string
	for i, l := range limits {
		built, err := buildLimit(i, l)
		if err != nil {
			return nil, err
		}
		for _, p := range built.policies {
			if j, dup := seen[p.name]; dup && j == i {
				return nil, fmt.Errorf("%w: limit %d names two policies %s: set Names", ErrInvalidConfig, i, quote(p.name))
			} else if dup {
				return nil, fmt.Errorf("%w: limits %d and %d both name a policy %s", ErrInvalidConfig, j, i, quote(p.name))
			}
			seen[p.name] = i
			if !built.dryRun && built.sem == nil {
				items = append(items, policyItem(p))
			}
		}
		m.limits = append(m.limits, built)
	}
	m.policy = joinList(items)
	return m, nil
}

// setAddressing checks and keeps the client address options.
func (m *Middleware) setAddressing(opts Options) error {
	clients, err := clientaddr.New(clientaddr.Options{TrustedProxies: opts.TrustedProxies,
		ProxyHeader: opts.ProxyHeader, IPv4Prefix: opts.IPv4Prefix, IPv6Prefix: opts.IPv6Prefix})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	m.clients = clients
	return nil
}

// buildLimit checks limit i and names its policies.
func buildLimit(i int, l Limit) (limit, error) {
	switch {
	case l.Limiter != nil && l.Semaphore != nil:
		return limit{}, fmt.Errorf("%w: limit %d has a Limiter and a Semaphore: one per Limit", ErrInvalidConfig, i)
	case l.Semaphore != nil:
		return buildInFlight(i, l)
	case l.Limiter == nil:
		return limit{}, fmt.Errorf("%w: limit %d has no Limiter", ErrInvalidConfig, i)
	}
	count := l.Limiter.Limits()
	if count == 0 {
		return limit{}, fmt.Errorf("%w: limit %d: its Limiter was not made by a ratelua constructor (NewSlidingWindow, NewTokenBucket...)", ErrInvalidConfig, i)
	}
	switch {
	case l.Reserve != nil && l.Cost != nil:
		return limit{}, fmt.Errorf("%w: limit %d has a Cost and a Reserve: one per Limit", ErrInvalidConfig, i)
	case l.Reserve != nil && !l.Limiter.Script().Reserves():
		return limit{}, fmt.Errorf("%w: limit %d has a Reserve, but its limiter's script %s takes no reservations (token_bucket does from v7)", ErrInvalidConfig, i, l.Limiter.Script())
	}
	names := l.Names
	switch {
	case names != nil && len(names) != count:
		return limit{}, fmt.Errorf("%w: limit %d has %d Names for a limiter of %d limits", ErrInvalidConfig, i, len(names), count)
	case names == nil && l.Name == "":
		return limit{}, fmt.Errorf("%w: limit %d has no Name", ErrInvalidConfig, i)
	case names == nil && count == 1:
		names = []string{l.Name}
	case names == nil:
		for j := range count {
			_, window := l.Limiter.Quota(j)
			names = append(names, l.Name+"-"+durfmt.Short(window))
		}
	}
	built := limit{limiter: l.Limiter, dryRun: l.Limiter.DryRun(), key: l.Key, cost: l.Cost, reserve: l.Reserve}
	for j, name := range names {
		if err := checkName(name); err != nil {
			return limit{}, fmt.Errorf("%w: limit %d: policy name %s %w", ErrInvalidConfig, i, quote(name), err)
		}
		q, window := l.Limiter.Quota(j) // q <= 1e9: ratelua's bound, well within an sf-integer
		built.policies = append(built.policies, policy{name: name, item: sfString(name), quota: q, window: window})
	}
	built.exempt = exemptSet(l.Exempt)
	return built, nil
}

// buildInFlight checks limit i, a Semaphore, and names its policy.
func buildInFlight(i int, l Limit) (limit, error) {
	switch {
	case l.Names != nil:
		return limit{}, fmt.Errorf("%w: limit %d: a Semaphore is one policy: set Name, not Names", ErrInvalidConfig, i)
	case l.Reserve != nil:
		return limit{}, fmt.Errorf("%w: limit %d: a Semaphore takes no Reserve (its Cost is the slots held)", ErrInvalidConfig, i)
	case l.Name == "":
		return limit{}, fmt.Errorf("%w: limit %d has no Name", ErrInvalidConfig, i)
	}
	if err := checkName(l.Name); err != nil {
		return limit{}, fmt.Errorf("%w: limit %d: policy name %s %w", ErrInvalidConfig, i, quote(l.Name), err)
	}
	built := limit{sem: l.Semaphore, dryRun: l.Semaphore.DryRun(), key: l.Key, cost: l.Cost, exempt: exemptSet(l.Exempt)}
	built.policies = []policy{{name: l.Name, item: sfString(l.Name), quota: l.Semaphore.Slots().Max}}
	return built, nil
}

// exemptSet is the set of keys, nil when there is none.
func exemptSet(keys []string) map[string]struct{} {
	if len(keys) == 0 {
		return nil
	}
	set := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		set[k] = struct{}{}
	}
	return set
}

// Handler returns next behind the limits. Its signature is the common
// middleware shape, func(http.Handler) http.Handler: chi's Use and
// gorilla/mux's Use take it as it is. One Middleware shares its limiters'
// keys across every route it wraps; give a route its own limiter (or a
// prefix) for a budget of its own.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
}

// serve asks every limit in order and answers or passes the request on.
func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if m.skip != nil && m.skip(r) {
		next.ServeHTTP(w, r)
		return
	}
	var rep report
	var client string
	var leases []*ratelua.Lease // the slots held for the request
	var held *holding           // the reservations held for the request
	// Whatever ends the loop, a panic of a later limit's Key or Cost
	// included, gives back the slots and the reservations not handed to
	// serveHolding (it ends its own): the panic goes on as before.
	defer func() {
		m.release(r, leases)
		m.cancel(r, held)
	}()
	for i := range m.limits {
		l := &m.limits[i]
		var key string
		if l.key == nil {
			if client == "" {
				client = m.ClientKey(r)
			}
			key = client
		} else {
			var ok bool
			if key, ok = l.key(r); !ok {
				continue
			}
		}
		if _, exempt := l.exempt[key]; exempt {
			continue
		}
		n := int64(1)
		if l.reserve != nil {
			if n = l.reserve(r); n < 1 {
				continue
			}
			n = min(n, maxCost)
		} else if l.cost != nil {
			if n = l.cost(r); n < 1 {
				continue
			}
			// More than any quota either way: a denial that never passes,
			// not a refused argument.
			n = min(n, maxCost)
		}
		if l.sem != nil {
			lease, res, err := l.sem.AcquireN(r.Context(), key, n)
			if err != nil && m.onError != nil {
				m.onError(r, err)
			}
			if lease != nil {
				leases = append(leases, lease)
			}
			if l.dryRun || res.Allowed {
				continue
			}
			m.release(r, leases)
			leases = nil
			m.cancel(r, held)
			held = nil
			m.setHeaders(w.Header(), &rep, false)
			if err != nil {
				m.fail(w, r)
				return
			}
			m.denyInFlight(w, r, l, res, n)
			return
		}
		var res ratelua.Result
		var err error
		if l.reserve != nil {
			var resv *ratelua.Reservation
			resv, err = l.limiter.Reserve(r.Context(), key, n)
			res = resv.Result()
			if resv.Held() {
				if held == nil {
					held = &holding{}
				}
				held.reservations = append(held.reservations, resv)
			}
		} else {
			res, err = l.limiter.AllowN(r.Context(), key, n)
		}
		if err != nil && m.onError != nil {
			m.onError(r, err)
		}
		if l.dryRun {
			continue // it admits every request; the client sees none of it
		}
		if err != nil && !res.Allowed {
			m.release(r, leases)
			leases = nil
			m.cancel(r, held)
			held = nil
			m.setHeaders(w.Header(), &rep, false)
			m.fail(w, r)
			return
		}
		if err != nil {
			continue // admitted without an answer (FailOpen): nothing to report
		}
		rep.consider(l, res)
		if !res.Allowed {
			m.release(r, leases)
			leases = nil
			m.cancel(r, held)
			held = nil
			m.setHeaders(w.Header(), &rep, true)
			m.deny(w, r, &rep, n)
			return
		}
	}
	m.setHeaders(w.Header(), &rep, false)
	if len(leases) == 0 && held == nil {
		next.ServeHTTP(w, r)
		return
	}
	holdingLeases, reservations := leases, held
	leases, held = nil, nil
	m.serveHolding(w, r, next, holdingLeases, reservations)
}

// serveHolding runs next while the request holds leases and
// reservations, under a context cancelled when a lease is lost (and
// carrying the reservations for Settle), and when next returns or panics
// releases the leases and settles the reservations.
func (m *Middleware) serveHolding(w http.ResponseWriter, r *http.Request, next http.Handler, leases []*ratelua.Lease, held *holding) {
	ctx, cancel := context.WithCancelCause(r.Context())
	if held != nil {
		ctx = context.WithValue(ctx, holdingKey{}, held)
	}
	done := make(chan struct{})
	defer func() {
		close(done)
		cancel(nil)
		m.release(r, leases)
		m.settle(r, held)
	}()
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
	next.ServeHTTP(w, r.WithContext(ctx))
}

// releaseTimeout bounds the release of a request's slots.
const releaseTimeout = 5 * time.Second

// release gives back the slots a request held, even when its client has
// gone (its context is done); a failure is OnError's (the slots then come
// back when their leases end).
func (m *Middleware) release(r *http.Request, leases []*ratelua.Lease) {
	if len(leases) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), releaseTimeout)
	defer cancel()
	for _, l := range leases {
		if err := l.Release(ctx); err != nil && m.onError != nil {
			m.onError(r, err)
		}
	}
}

// denyInFlight answers a request denied by the semaphore of l: 429,
// Retry-After, and the problem body (or Options.Denied).
func (m *Middleware) denyInFlight(w http.ResponseWriter, r *http.Request, l *limit, res ratelua.Result, cost int64) {
	p := &l.policies[0]
	if m.headers != HeadersNone && res.RetryAfter >= 0 {
		w.Header()["Retry-After"] = []string{strconv.FormatInt(max(1, ceilSeconds(res.RetryAfter)), 10)}
	}
	d := Denial{Policies: []string{p.name}, Result: res, Cost: cost}
	if m.denied != nil {
		m.denied.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), denialKey{}, d)))
		return
	}
	body := quotaExceeded(d, p.quota, m.headers != HeadersNone)
	if body.Detail != "" && res.RetryAfter >= 0 {
		body.Detail = fmt.Sprintf("policy %s allows %d requests in flight for this key; one ends in %d s at the latest", strconv.Quote(p.name), p.quota, max(1, ceilSeconds(res.RetryAfter)))
	}
	writeProblem(w, http.StatusTooManyRequests, body)
}

// maxCost is the most events a limiter takes in one call, 2^52.
const maxCost = 1 << 52

// report is the limit closest to running out among the Results so far.
type report struct {
	p    *policy
	res  ratelua.Result
	wait time.Duration // t as a duration; negative: none
}

// consider takes limiter l's Result res when its deciding limit is closer
// to running out than the one held: a denial over an admission, then the
// longer wait (Never the longest); among admissions the fewest remaining,
// then the longer wait.
func (rep *report) consider(l *limit, res ratelua.Result) {
	if res.Limit < 0 || res.Limit >= len(l.policies) {
		return
	}
	p := &l.policies[res.Limit]
	wait := effectiveWindow(p, res)
	if rep.p != nil {
		switch {
		case res.Allowed != rep.res.Allowed:
			if res.Allowed {
				return
			}
		case !res.Allowed:
			if !longer(wait, rep.wait) {
				return
			}
		case res.Remaining != rep.res.Remaining:
			if res.Remaining > rep.res.Remaining {
				return
			}
		case !longer(wait, rep.wait):
			return
		}
	}
	rep.p, rep.res, rep.wait = p, res, wait
}

// longer reports whether wait a is longer than b, a negative wait (never)
// being the longest.
func longer(a, b time.Duration) bool {
	switch {
	case b < 0:
		return false
	case a < 0:
		return true
	}
	return a > b
}

// effectiveWindow is t, the time within which the client can use no more
// than res.Remaining under p: when denied, the wait until the request
// would pass (negative if never); when admitted, the time until p's quota
// is whole again at the latest, its window, or sooner if the limiter's
// state is fresh before.
func effectiveWindow(p *policy, res ratelua.Result) time.Duration {
	if !res.Allowed {
		if res.RetryAfter < 0 {
			return -1
		}
		return res.RetryAfter
	}
	return min(p.window, res.ResetAfter)
}

// deny answers a denied request: Options.Denied, or 429 with the problem
// body.
func (m *Middleware) deny(w http.ResponseWriter, r *http.Request, rep *report, cost int64) {
	d := Denial{Policies: []string{rep.p.name}, Result: rep.res, Cost: cost}
	if m.denied != nil {
		m.denied.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), denialKey{}, d)))
		return
	}
	writeProblem(w, http.StatusTooManyRequests, quotaExceeded(d, rep.p.quota, m.headers != HeadersNone))
}

// fail answers a request no limiter could decide: Options.Unavailable, or
// 503 with a problem body.
func (m *Middleware) fail(w http.ResponseWriter, r *http.Request) {
	if m.unavailable != nil {
		m.unavailable.ServeHTTP(w, r)
		return
	}
	writeProblem(w, http.StatusServiceUnavailable, problem{
		Type: "about:blank", Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail: "the rate limiter could not decide this request",
	})
}

// Denial says why a request was denied; Options.Denied reads it with
// DenialFrom.
type Denial struct {
	// Policies names the violated policy: the deciding limit of the
	// limiter that denied the request.
	Policies []string
	// Result is that limiter's decision; Result.RetryAfter is
	// ratelua.Never when the request costs more than the policy's quota
	// and can never pass.
	Result ratelua.Result
	// Cost is what the request cost under that limiter.
	Cost int64
}

type denialKey struct{}

// DenialFrom returns the Denial of the request whose context is ctx, in
// Options.Denied.
func DenialFrom(ctx context.Context) (Denial, bool) {
	d, ok := ctx.Value(denialKey{}).(Denial)
	return d, ok
}
