package rls

import (
	"context"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/ratelua/ratelua/rls/statsink"
)

// The exported statistics' names, the reference's: a rule's under
// ruleStatPrefix, the service's under serviceStatPrefix, each gRPC
// method's under "ratelimit_server.<method>.", the Go runtime's under
// "ratelimit.go.".
const (
	ruleStatPrefix    = "ratelimit.service.rate_limit."
	serviceStatPrefix = "ratelimit.service."
	// maxUnknownDomains bounds the domain_not_found names (a client
	// sending new domains would grow them without end, as it grows the
	// reference's): the domains past it count under "(other)".
	maxUnknownDomains = MaxStatNamesPerRule
)

// serviceStats are the service's statistics beside the rules', exported
// (statsd, dogstatsd, Prometheus) under the reference's names. Without a
// store its counters are nil and count nothing.
type serviceStats struct {
	store             *statsink.Store
	configLoadSuccess *statsink.Counter // ratelimit.service.config_load_success
	configLoadError   *statsink.Counter // ratelimit.service.config_load_error
	globalShadowMode  *statsink.Counter // ratelimit.service.global_shadow_mode: requests SHADOW_MODE answered OK
	redisError        *statsink.Counter // ratelimit.service.call.should_rate_limit.redis_error: the backend failed
	serviceError      *statsink.Counter // ratelimit.service.call.should_rate_limit.service_error: a request refused

	mu      sync.Mutex
	domains map[string]*statsink.Counter // domain_not_found by domain, at most maxUnknownDomains
}

// newServiceStats returns the service statistics of store (nil: none).
func newServiceStats(store *statsink.Store) *serviceStats {
	return &serviceStats{
		store:             store,
		configLoadSuccess: store.Counter(serviceStatPrefix + "config_load_success"),
		configLoadError:   store.Counter(serviceStatPrefix + "config_load_error"),
		globalShadowMode:  store.Counter(serviceStatPrefix + "global_shadow_mode"),
		redisError:        store.Counter(serviceStatPrefix + "call.should_rate_limit.redis_error"),
		serviceError:      store.Counter(serviceStatPrefix + "call.should_rate_limit.service_error"),
		domains:           map[string]*statsink.Counter{},
	}
}

// domainNotFound counts a descriptor of a domain no configuration has:
// ratelimit.service.rate_limit.<domain>.domain_not_found.
func (s *serviceStats) domainNotFound(domain string) {
	if s.store == nil {
		return
	}
	s.mu.Lock()
	c := s.domains[domain]
	if c == nil {
		name := sanitizeStatName(domain)
		if len(s.domains) >= maxUnknownDomains {
			name = "(other)"
		}
		c = s.store.Counter(ruleStatPrefix + name + ".domain_not_found")
		if len(s.domains) < maxUnknownDomains {
			s.domains[domain] = c
		}
	}
	s.mu.Unlock()
	c.Inc()
}

// grpcStats returns the gRPC interceptor counting every call under the
// reference's names: ratelimit_server.<method>.total_requests when it
// starts, and its duration in ratelimit_server.<method>.response_time (in
// milliseconds) when it ends.
func grpcStats(store *statsink.Store) grpc.UnaryServerInterceptor {
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
