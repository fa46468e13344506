package stats

import (
	"context"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/ratelua/ratelua/rls/statsink"
)

// The exported statistics' names, the reference's: a rule's under
// RulePrefix, the service's under ServicePrefix, each gRPC method's under
// "ratelimit_server.<method>.", the Go runtime's under RuntimePrefix.
const (
	RulePrefix    = "ratelimit.service.rate_limit."
	ServicePrefix = "ratelimit.service."
	RuntimePrefix = "ratelimit.go"
	// MaxUnknownDomains bounds the domain_not_found names (a client
	// sending new domains would grow them without end, as it grows the
	// reference's): the domains past it count under "(other)".
	MaxUnknownDomains = MaxStatNamesPerRule
)

// Event is one of the service's statistics beside the rules'.
type Event int

// The service's events, counted under the reference's names.
const (
	// ConfigLoadSuccess: a configuration loaded (ratelimit.service.config_load_success).
	ConfigLoadSuccess Event = iota
	// ConfigLoadError: a configuration that did not load (config_load_error).
	ConfigLoadError
	// GlobalShadowMode: a request over the limit that SHADOW_MODE answered
	// OK (global_shadow_mode).
	GlobalShadowMode
	// RedisError: a request whose backend failed
	// (call.should_rate_limit.redis_error).
	RedisError
	// ServiceError: a request refused (call.should_rate_limit.service_error).
	ServiceError
	numEvents
)

// eventNames are the events' names under ServicePrefix.
var eventNames = [numEvents]string{"config_load_success", "config_load_error", "global_shadow_mode",
	"call.should_rate_limit.redis_error", "call.should_rate_limit.service_error"}

// exported are the counters of a store (statsd, dogstatsd, Prometheus).
type exported struct {
	store  *statsink.Store
	events [numEvents]*statsink.Counter

	mu      sync.Mutex
	domains map[string]*statsink.Counter // domain_not_found by domain, at most MaxUnknownDomains
}

// Export counts every statistic in store too, under the reference's names:
// each rule's (RulePrefix + "<rule>.<statistic>"), the service's events
// and the unknown domains' (RulePrefix + "<domain>.domain_not_found"). It
// must be called before the first count; nil exports nothing.
func (s *Stats) Export(store *statsink.Store) {
	if s == nil || store == nil {
		return
	}
	e := &exported{store: store, domains: map[string]*statsink.Counter{}}
	for i, name := range eventNames {
		e.events[i] = store.Counter(ServicePrefix + name)
	}
	s.export = e
}

// Count counts one of the service's events.
func (s *Stats) Count(e Event) {
	if s == nil || s.export == nil {
		return
	}
	s.export.events[e].Inc()
}

// DomainNotFound counts a descriptor of a domain no configuration has.
func (s *Stats) DomainNotFound(domain string) {
	if s == nil || s.export == nil {
		return
	}
	e := s.export
	e.mu.Lock()
	c := e.domains[domain]
	if c == nil {
		name := sanitizeStatName(domain)
		if len(e.domains) >= MaxUnknownDomains {
			name = "(other)"
		}
		c = e.store.Counter(RulePrefix + name + ".domain_not_found")
		if len(e.domains) < MaxUnknownDomains {
			e.domains[domain] = c
		}
	}
	e.mu.Unlock()
	c.Inc()
}

// ruleCounters are the exported counters of the rule named name.
func (e *exported) ruleCounters(name string) (out [numStats]*statsink.Counter) {
	if e == nil {
		return out
	}
	for i, stat := range Names() {
		out[i] = e.store.Counter(RulePrefix + name + "." + stat)
	}
	return out
}

// UnaryServerInterceptor counts every gRPC call in store under the
// reference's names: ratelimit_server.<method>.total_requests when it
// starts, and its duration in ratelimit_server.<method>.response_time (in
// milliseconds) when it ends.
func UnaryServerInterceptor(store *statsink.Store) grpc.UnaryServerInterceptor {
	type method struct {
		total *statsink.Counter
		time  *statsink.Timer
	}
	var methods sync.Map
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		v, ok := methods.Load(info.FullMethod)
		if !ok {
			name := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
			v, _ = methods.LoadOrStore(info.FullMethod, &method{
				total: store.Counter("ratelimit_server." + name + ".total_requests"),
				time:  store.Timer("ratelimit_server." + name + ".response_time"),
			})
		}
		m := v.(*method)
		start := time.Now()
		m.total.Inc()
		resp, err := handler(ctx, req)
		m.time.Add(time.Since(start))
		return resp, err
	}
}
