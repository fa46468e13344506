package statsref

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratelua/ratelua/rls/internal/loopback"
	"github.com/ratelua/ratelua/testbench"
)

// pool are the descriptors the stream sends ("k=v,k=v"): each rule of
// testdata/config/stats.yaml, some twice, and one that matches none.
var pool = []string{
	"user=u1", "user=u2", "user=u3",
	"path=/a,method=GET,tier=gold", "path=/b,method=POST,tier=free",
	"api=search", "api=other", "shadow=s", "free=x",
	"ip=10.0.0.1", "ip=192.168.1.20",
}

func descriptor(entries string) *rlpb.RateLimitDescriptor {
	out := &rlpb.RateLimitDescriptor{}
	for _, kv := range strings.Split(entries, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out.Entries = append(out.Entries, &rlpb.RateLimitDescriptor_Entry{Key: k, Value: v})
	}
	return out
}

// stream returns n requests from a seeded generator: 1 to 3 descriptors,
// hits_addend absent, 0, 1 or 3; now and then an unknown domain, an empty
// domain or no descriptors (refused: service_error).
func stream(seed uint64, n int) []*pb.RateLimitRequest {
	r := rand.New(rand.NewPCG(seed, 33))
	reqs := make([]*pb.RateLimitRequest, n)
	for i := range reqs {
		req := &pb.RateLimitRequest{Domain: "stats", HitsAddend: []uint32{0, 0, 0, 1, 3}[r.IntN(5)]}
		switch r.IntN(25) {
		case 0:
			req.Domain = "unknown"
		case 1:
			req.Domain = ""
		}
		if r.IntN(25) != 0 {
			for range 1 + r.IntN(3) {
				req.Descriptors = append(req.Descriptors, descriptor(pool[r.IntN(len(pool))]))
			}
		}
		reqs[i] = req
	}
	return reqs
}

// backend is the servers a pair runs on: a single node or a six-node
// cluster of redis-server or valkey-server, one for each service.
type backend struct {
	kind    testbench.Kind
	cluster bool
}

func (b backend) String() string {
	if b.cluster {
		return string(b.kind) + "-cluster"
	}
	return string(b.kind) + "-single"
}

// backends are the servers every comparison runs on in TestStatsdOnEveryServer.
var backends = []backend{{testbench.Redis, false}, {testbench.Valkey, false}, {testbench.Redis, true}, {testbench.Valkey, true}}

// pair is the two services of a comparison, each on servers of its own.
type pair struct {
	ref, ours *service
	// kill stops the servers of both services (nil on a cluster: the
	// reference's cluster client retries a cluster that is gone for
	// longer than a test waits).
	kill func() error
	sent int // gRPC calls made to each
}

// startPair starts both services on a Redis single node each, with env
// (and, per service, its own).
func startPair(t *testing.T, refEnv, ourEnv []string, env ...string) *pair {
	t.Helper()
	return startPairOn(t, backend{kind: testbench.Redis}, refEnv, ourEnv, env...)
}

// startPairOn starts both services on servers of b, with the
// configuration of testdata/config.
func startPairOn(t *testing.T, b backend, refEnv, ourEnv []string, env ...string) *pair {
	t.Helper()
	return startPairIn(t, "testdata/config", b, refEnv, ourEnv, env...)
}

// startPairIn starts both services on servers of b, with the
// configuration files of dir.
func startPairIn(t *testing.T, dir string, b backend, refEnv, ourEnv []string, env ...string) *pair {
	t.Helper()
	bins, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	p := &pair{}
	var refAddr, ourAddr string
	if b.cluster {
		refCluster, ourCluster := testbench.Start(t, testbench.Options{Kind: b.kind}), testbench.Start(t, testbench.Options{Kind: b.kind})
		refAddr, ourAddr = strings.Join(refCluster.Addrs(), ","), strings.Join(ourCluster.Addrs(), ",")
		env = append(env, "REDIS_TYPE=CLUSTER")
	} else {
		refNode, ourNode := testbench.StartSingle(t, testbench.Options{Kind: b.kind}), testbench.StartSingle(t, testbench.Options{Kind: b.kind})
		refAddr, ourAddr = refNode.Addr, ourNode.Addr
		p.kill = func() error { return errors.Join(refNode.Kill(), ourNode.Kill()) }
	}
	p.ref = startService(t, "reference", bins["reference"], dir, refAddr, append(env, refEnv...)...)
	p.ours = startService(t, "ratelua-rls", bins["ratelua-rls"], dir, ourAddr, append(env, ourEnv...)...)
	return p
}

// send sends req to both services; refused says whether both must refuse
// it.
func (p *pair) send(t *testing.T, req *pb.RateLimitRequest, refused bool) {
	t.Helper()
	for _, s := range []*service{p.ref, p.ours} {
		err := s.call(req)
		if (err != nil) != refused {
			t.Fatalf("%s answered %v to %v (refusal expected: %v)", s.name, err, req, refused)
		}
	}
	p.sent++
}

// exercise sends both services the seeded stream, then, with their
// servers killed (single nodes), one request (redis_error); with
// badConfig, a file that does not load (config_load_error) first.
func (p *pair) exercise(t *testing.T, badConfig func()) {
	t.Helper()
	avoidMidnight()
	for _, req := range stream(33, 150) {
		p.send(t, req, req.Domain == "" || len(req.Descriptors) == 0)
	}
	if badConfig != nil {
		badConfig()
	}
	if p.kill == nil {
		return
	}
	if err := p.kill(); err != nil {
		t.Fatal(err)
	}
	p.send(t, &pb.RateLimitRequest{Domain: "stats", Descriptors: []*rlpb.RateLimitDescriptor{descriptor("user=u9")}}, true)
}

// flushed sends, three times, a marker request (an unknown domain) to
// both services and waits until each has exported it (requests counts
// the calls a service exported): the third marker's flush started after
// the second's ended, which started after every request before the
// markers ended, so every statistic of those is exported by then.
func (p *pair) flushed(t *testing.T, requests func(*service) uint64) {
	t.Helper()
	for range 3 {
		p.send(t, &pb.RateLimitRequest{Domain: "marker", Descriptors: []*rlpb.RateLimitDescriptor{descriptor("m=1")}}, false)
		for _, s := range []*service{p.ref, p.ours} {
			waitFor(t, s.name+" exports request "+strconv.Itoa(p.sent), func() bool { return requests(s) >= uint64(p.sent) })
		}
	}
}

// writeBadConfig adds a file that does not load to both services'
// configuration directories (by a rename, as a ConfigMap swap) and waits
// until each counted the error.
func writeBadConfig(t *testing.T, p *pair, loadErrors func(*service) uint64) {
	t.Helper()
	for _, s := range []*service{p.ref, p.ours} {
		// Written outside the watched tree (the reference reloads at
		// every event under it), renamed in: one change.
		tmp := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(tmp, []byte("domain: bad\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(s.config, "bad.yaml")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, s.name+" counts config_load_error", func() bool { return loadErrors(s) > 0 })
	}
}

// mustHave fails unless the reference's statistics hold each name (so
// that the stream exercised what the comparison is about).
func mustHave(t *testing.T, names []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, n := range names {
			found = found || strings.Contains(n, w)
		}
		if !found {
			t.Errorf("the reference exported no %s: the stream does not exercise it", w)
		}
	}
}

// compareStatsd compares two services' statsd (or dogstatsd) metrics: the
// reference's counters of the service and its requests by name (and tags)
// and summed value, its timers by name and number of values, the Go
// runtime's by name; a name ratelua-rls exports that the reference does
// not is an error, a name only the reference exports (its Redis pool's)
// is logged.
func compareStatsd(t *testing.T, ref, ours map[string]*metric) {
	t.Helper()
	var names []string
	for n := range ref {
		names = append(names, n)
	}
	for n := range ours {
		if ref[n] == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	compared := 0
	for _, n := range names {
		a, b := ref[n], ours[n]
		switch {
		case a == nil:
			t.Errorf("ratelua-rls exports %s (%s), the reference does not", n, b.kind)
			continue
		case strings.HasPrefix(n, "ratelimit.redis_pool."), strings.HasPrefix(n, "runtime."):
			// Its Redis pool's and its runtime loader's (goruntime):
			// ratelua-rls has neither.
			if b != nil {
				t.Errorf("ratelua-rls exports %s, which it does not have", n)
			}
			t.Logf("only the reference exports %s (%s)", n, a.kind)
			continue
		case b == nil:
			t.Errorf("%s (%s, %d): the reference exports it, ratelua-rls does not", n, a.kind, a.sum)
			continue
		case a.kind != b.kind:
			t.Errorf("%s: the reference sends it as %s, ratelua-rls as %s", n, a.kind, b.kind)
		case strings.HasPrefix(n, "ratelimit.go."):
			// The Go runtime's: the names, not the values.
		case strings.Contains(n, ".rate_limit.marker."):
			// The markers' own (flushed waits for their request counts,
			// not for these: the last marker's domain_not_found may come
			// in the reference's next flush): the names, not the values.
		case strings.Contains(n, ".response_time"):
			if a.lines != b.lines {
				t.Errorf("%s: the reference sent %d values, ratelua-rls %d", n, a.lines, b.lines)
			}
		default:
			if a.sum != b.sum {
				t.Errorf("%s: the reference %d, ratelua-rls %d", n, a.sum, b.sum)
			}
		}
		compared++
	}
	t.Logf("%d names compared", compared)
}

// requestsOf reads the requests a statsd listener's service exported.
func requestsOf(l map[*service]*statsdListener, t *testing.T) func(*service) uint64 {
	return func(s *service) uint64 {
		return sumPrefix(l[s].metrics(t), "ratelimit_server.ShouldRateLimit.total_requests")
	}
}

// sumPrefix sums the counters whose names start with prefix.
func sumPrefix(m map[string]*metric, prefix string) uint64 {
	var n uint64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			n += v.sum
		}
	}
	return n
}

// TestStatsdAgainstReference (issue 33, statistics) runs both services
// with statsd (USE_STATSD) over UDP (STATSD_PROTOCOL=udp) and over TCP
// (the reference's default) and EXTRA_TAGS, sends both the same requests
// (every kind of rule, refusals, an unknown domain, a configuration that
// does not load, a request with the server killed) and compares what each
// sent to the test's listener: the same names, the same values.
func TestStatsdAgainstReference(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			lref, lours := listenStatsd(t, network), listenStatsd(t, network)
			env := []string{"USE_STATSD=true", "STATSD_HOST=127.0.0.1", "EXTRA_TAGS=team:rl,zone:eu.1"}
			if network == "udp" {
				env = append(env, "STATSD_PROTOCOL=udp")
			}
			p := startPair(t, []string{"STATSD_PORT=" + lref.port()}, []string{"STATSD_PORT=" + lours.port()}, env...)
			l := map[*service]*statsdListener{p.ref: lref, p.ours: lours}
			p.exercise(t, func() {
				writeBadConfig(t, p, func(s *service) uint64 { return sumPrefix(l[s].metrics(t), "ratelimit.service.config_load_error") })
			})
			p.flushed(t, requestsOf(l, t))
			ref, ours := lref.metrics(t), lours.metrics(t)
			var names []string
			for n := range ref {
				names = append(names, n)
			}
			mustHave(t, names, ".near_limit.__team=rl.__zone=eu_1", ".over_limit.", ".shadow_mode.", "stats.ip_10_0_0_1.total_hits",
				"stats.path.method.tier.", "unknown.domain_not_found", "service_error", "redis_error", "config_load_success", "config_load_error",
				"ratelimit_server.ShouldRateLimit.response_time", "ratelimit.go.numGoroutine")
			compareStatsd(t, ref, ours)
		})
	}
}

// TestStatsdOnEveryServer runs the statsd comparison (over UDP) with both
// services on redis-server and valkey-server, single nodes and six-node
// clusters (the reference in its cluster mode): the same names and
// values whatever the servers.
func TestStatsdOnEveryServer(t *testing.T) {
	for _, b := range backends {
		t.Run(b.String(), func(t *testing.T) {
			lref, lours := listenStatsd(t, "udp"), listenStatsd(t, "udp")
			p := startPairOn(t, b, []string{"STATSD_PORT=" + lref.port()}, []string{"STATSD_PORT=" + lours.port()},
				"USE_STATSD=true", "STATSD_HOST=127.0.0.1", "STATSD_PROTOCOL=udp")
			l := map[*service]*statsdListener{p.ref: lref, p.ours: lours}
			p.exercise(t, nil)
			p.flushed(t, requestsOf(l, t))
			ref, ours := lref.metrics(t), lours.metrics(t)
			var names []string
			for n := range ref {
				names = append(names, n)
			}
			mustHave(t, names, ".near_limit", ".over_limit", ".shadow_mode", "stats.ip_10_0_0_1.total_hits", "unknown.domain_not_found", "service_error")
			compareStatsd(t, ref, ours)
		})
	}
}

// TestDogStatsdAgainstReference runs both services with dogstatsd
// (USE_DOG_STATSD), EXTRA_TAGS, a mogrifier and SHADOW_MODE
// (global_shadow_mode), and compares names, tags and values.
func TestDogStatsdAgainstReference(t *testing.T) {
	lref, lours := listenStatsd(t, "udp"), listenStatsd(t, "udp")
	env := []string{"USE_STATSD=false", "USE_DOG_STATSD=true", "STATSD_HOST=127.0.0.1", "EXTRA_TAGS=team:rl",
		"SHADOW_MODE=true", "DD_ORIGIN_DETECTION_ENABLED=false",
		"USE_DOG_STATSD_MOGRIFIERS=RULE",
		`DOG_STATSD_MOGRIFIER_RULE_PATTERN=^ratelimit\.service\.rate_limit\.([^.]*)\.(.*)\.(total_hits|over_limit|near_limit|within_limit|shadow_mode)$`,
		"DOG_STATSD_MOGRIFIER_RULE_NAME=ratelimit.service.rate_limit.$3",
		"DOG_STATSD_MOGRIFIER_RULE_TAGS=domain:$1,rule:$2",
	}
	p := startPair(t, []string{"STATSD_PORT=" + lref.port()}, []string{"STATSD_PORT=" + lours.port()}, env...)
	l := map[*service]*statsdListener{p.ref: lref, p.ours: lours}
	p.exercise(t, nil)
	p.flushed(t, requestsOf(l, t))
	ref, ours := lref.metrics(t), lours.metrics(t)
	var names []string
	for n := range ref {
		names = append(names, n)
	}
	mustHave(t, names, "ratelimit.service.rate_limit.over_limit #domain:stats,rule:user_u1,team:rl", "ratelimit.service.global_shadow_mode #team:rl",
		"domain_not_found #team:rl", "redis_error #team:rl")
	compareStatsd(t, ref, ours)
}

// TestPrometheusAgainstReference runs both services with USE_PROMETHEUS
// and compares what each endpoint serves, family by family of the
// reference's ratelimit_ names: the same names, labels, types and values
// (the response times' counts, not their durations; the Go runtime's
// names, not their values).
func TestPrometheusAgainstReference(t *testing.T) {
	refPort, ourPort := loopback.FreePort(t), loopback.FreePort(t)
	url := map[string]string{
		"reference":   "http://127.0.0.1:" + strconv.Itoa(refPort) + "/metrics",
		"ratelua-rls": "http://127.0.0.1:" + strconv.Itoa(ourPort) + "/metrics",
	}
	p := startPair(t, []string{"PROMETHEUS_ADDR=127.0.0.1:" + strconv.Itoa(refPort)}, []string{"PROMETHEUS_ADDR=127.0.0.1:" + strconv.Itoa(ourPort)},
		"USE_STATSD=false", "USE_PROMETHEUS=true")
	p.exercise(t, nil)
	p.flushed(t, func(s *service) uint64 {
		samples, _ := scrape(t, url[s.name])
		v, _ := strconv.ParseFloat(samples[`ratelimit_service_total_requests{grpc_method="ShouldRateLimit"}`], 64)
		return uint64(v)
	})
	ref, refTypes := scrape(t, url["reference"])
	ours, ourTypes := scrape(t, url["ratelua-rls"])
	var names []string
	for n := range ref {
		if strings.HasPrefix(n, "ratelimit_") {
			names = append(names, n)
		}
	}
	for n := range ours {
		if _, ok := ref[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	mustHave(t, names, `ratelimit_service_rate_limit_near_limit{domain="stats",key1="user_u1"}`,
		`ratelimit_service_rate_limit_total_hits{domain="stats",key1="path",key2="method"}`,
		`ratelimit_service_should_rate_limit_error{err_type="redis_error"}`, `ratelimit_service_config_load_success`,
		`ratelimit_service_rate_limit_unknown_domain_not_found`, `ratelimit_service_response_time_seconds_count`)
	compared := 0
	for _, n := range names {
		a, inRef := ref[n]
		b, inOurs := ours[n]
		family, _, _ := strings.Cut(n, "{")
		switch {
		case !inRef:
			t.Errorf("ratelua-rls serves %s %s, the reference does not", n, b)
			continue
		case strings.HasPrefix(n, "ratelimit_redis_pool_"), strings.HasPrefix(n, "runtime_"):
			t.Logf("only the reference serves %s", n)
			continue
		case !inOurs:
			t.Errorf("%s %s: the reference serves it, ratelua-rls does not", n, a)
			continue
		case strings.HasPrefix(n, "ratelimit_go_"), strings.HasPrefix(n, "ratelimit_service_response_time_seconds_bucket"),
			strings.HasPrefix(n, "ratelimit_service_response_time_seconds_sum"):
		default:
			if a != b {
				t.Errorf("%s: the reference %s, ratelua-rls %s", n, a, b)
			}
		}
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(family, suffix); ok && refTypes[f] != "" && refTypes[f] != ourTypes[f] {
				t.Errorf("%s: the reference's type %s, ratelua-rls's %s", f, refTypes[f], ourTypes[f])
			}
		}
		compared++
	}
	t.Logf("%d samples compared", compared)
}
