package reference

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/testbench"
)

// descriptor is one descriptor a stream may send.
type descriptor struct {
	entries  string // "k=v,k=v"
	override *rlpb.RateLimitDescriptor_RateLimitOverride
	hits     []uint64 // its own hits_addend, three times in four, when set
}

func d(entries string) descriptor { return descriptor{entries: entries} }

// bigHits are hits_addend around the limits of testdata/config/bounds.yaml
// (10^9 and 2^32-1), so that a few requests take a count to them.
var bigHits = []uint64{0, 1, 2, 999_999_998, 999_999_999, 1_000_000_000, 2_147_483_648, 4_294_967_294, 4_294_967_295}

// dh is a descriptor of entries sending bigHits.
func dh(entries string) descriptor { return descriptor{entries: entries, hits: bigHits} }

// deep is the descriptor of the first n levels of bounds.yaml's chain.
func deep(n int) descriptor {
	kv := make([]string, n)
	for i := range kv {
		kv[i] = fmt.Sprintf("l%d=v%d", i+1, i+1)
	}
	return dh(strings.Join(kv, ","))
}

// overrideMost is a descriptor carrying its own limit of 2^32-1 a unit.
func overrideMost(entries string, unit typev3.RateLimitUnit) descriptor {
	return descriptor{entries: entries, hits: bigHits, override: &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 4_294_967_295, Unit: unit}}
}

// pools are the descriptors of each configuration of testdata/config: ones
// that match a rule, one through a wildcard, ones that match none.
var pools = map[string][]descriptor{
	"basic": {d("generic_key=foo"), d("generic_key=bar"), d("remote_address=1.2.3.4"), d("remote_address=5.6.7.8"),
		d("client_id=acme,path=/x"), d("client_id=acme,path=/login"), d("client_id=acme"), d("client_id=other,path=/x"),
		d("user=u1,plan=free,method=GET"), d("user=u2,plan=free,method=POST"), d("user=u1,plan=paid,method=GET"), d("user=u1,plan=free")},
	"hits":     {d("tenant=t1"), d("tenant=t2"), d("small=s")},
	"replaces": {d("a=x"), d("a=y"), d("b=1"), d("c=1"), d("d=1")},
	"shadow":   {d("s=1"), d("t=1"), d("q=1"), d("q2=1")},
	"wildcard": {d("path=/api/a"), d("path=/api/b"), d("path=/v1/users"), d("path=/v1/orders"), d("path=/other"),
		d("host=edge-1,path=/p"), d("host=edge-2,path=/p"), d("host=core-1,path=/p"),
		d("tenant=t-1"), d("tenant=t-2"), d("region=eu-1,path=/p"), d("region=eu-2,path=/q")},
	"edge": {d("zero=1"), d("day=1"), d("week=1"), d("year=1"), d("parent=1"), d("parent=1,child=2"),
		{entries: "ovr=1", override: &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}}},
	// Issue 33 row 7: every edge of requests_per_unit, every unit, shadow
	// mode, replaces, 64 levels deep, and overrides of 2^32-1.
	"bounds": {dh("one=1"), dh("below=1"), dh("billion=1"), dh("most_second=1"), dh("most_minute=1"), dh("most_hour=1"),
		dh("most_day=1"), dh("most_week=1"), dh("most_month=1"), dh("most_year=1"), dh("shadow=1"), dh("big=1"), dh("bigger=1"),
		deep(1), deep(32), deep(40), deep(64), overrideMost("most_second=2", typev3.RateLimitUnit_MINUTE), overrideMost("ovr=2", typev3.RateLimitUnit_YEAR)},
}

// domains lists the pools in a fixed order (map order is random).
var domains = []string{"basic", "hits", "replaces", "shadow", "wildcard", "edge", "bounds"}

func (x descriptor) proto() *rlpb.RateLimitDescriptor {
	out := &rlpb.RateLimitDescriptor{Limit: x.override}
	for _, kv := range strings.Split(x.entries, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out.Entries = append(out.Entries, &rlpb.RateLimitDescriptor_Entry{Key: k, Value: v})
	}
	return out
}

// stream returns n requests on domain, from a seeded generator: 1 to 4
// descriptors each, hits_addend absent, 0, 1 or more at request level and
// at times per descriptor; now and then an unknown domain, an empty domain
// or no descriptors.
func stream(seed uint64, domain string, n int) []*pb.RateLimitRequest {
	r := rand.New(rand.NewPCG(seed, 21))
	pool := pools[domain]
	reqs := make([]*pb.RateLimitRequest, n)
	for i := range reqs {
		req := &pb.RateLimitRequest{Domain: domain}
		switch r.IntN(40) {
		case 0:
			req.Domain = "unknown"
		case 1:
			req.Domain = ""
		}
		if r.IntN(40) != 0 {
			for range 1 + r.IntN(4) {
				x := pool[r.IntN(len(pool))]
				desc := x.proto()
				if x.hits != nil {
					if r.IntN(4) != 0 {
						desc.HitsAddend = wrapperspb.UInt64(x.hits[r.IntN(len(x.hits))])
					}
				} else if r.IntN(4) == 0 {
					desc.HitsAddend = wrapperspb.UInt64([]uint64{0, 1, 2, 5, 11}[r.IntN(5)])
				}
				req.Descriptors = append(req.Descriptors, desc)
			}
		}
		req.HitsAddend = []uint32{0, 0, 0, 1, 2, 3, 12}[r.IntN(7)]
		reqs[i] = req
	}
	return reqs
}

// streams returns the units that send each domain's stream to both
// services, pair by pair, and fail on the first answer that differs.
func streams(t *testing.T, seed uint64, perDomain int) []unit {
	var units []unit
	for di, domain := range domains {
		reqs := stream(seed+uint64(di), domain, perDomain)
		units = append(units, unit{name: domain, domains: []string{domain}, n: len(reqs), run: func(ref, ours *service) string {
			ctx := context.Background()
			for i, req := range reqs {
				var a, b string
				ok := sameSecond(func() {
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					a = answer(ref.client.ShouldRateLimit(cctx, req))
					b = answer(ours.client.ShouldRateLimit(cctx, req))
				})
				if !ok {
					return fmt.Sprintf("request %d", i)
				}
				if a != b {
					t.Fatalf("%s request %d differs (seed %d)\nrequest: %s\nreference:   %s\nratelua-rls: %s", domain, i, seed, prototext.Format(req), a, b)
				}
			}
			return ""
		}})
	}
	return units
}

// jsonBodies are requests to /json: within the limit, the same until over
// it, a bare key, several descriptors, an unknown domain, and bodies the
// service refuses (no domain, no descriptors, not JSON, a field of the
// wrong type).
var jsonBodies = []string{
	`{"domain": "hits", "descriptors": [{"entries": [{"key": "tenant", "value": "json"}]}], "hits_addend": 4}`,
	`{"domain": "hits", "descriptors": [{"entries": [{"key": "tenant", "value": "json"}], "hits_addend": 0}]}`,
	`{"domain": "hits", "descriptors": [{"entries": [{"key": "tenant", "value": "json"}]}], "hits_addend": 7}`,
	`{"domain": "basic", "descriptors": [{"entries": [{"key": "remote_address", "value": "10.1.2.3"}]}]}`,
	`{"domain": "hits", "descriptors": [{"entries": [{"key": "tenant", "value": "j2"}], "hits_addend": 4}, {"entries": [{"key": "small", "value": "j"}]}]}`,
	`{"domain": "nowhere", "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}`,
	`{"descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}`,
	`{"domain": "basic"}`,
	`{"domain": "basic", "descriptors": [`,
	`{"domain": 7}`,
}

// jsonUnit sends jsonBodies to both services' /json endpoints and fails
// when the HTTP status or the response differ.
func jsonUnit(t *testing.T) unit {
	return unit{name: "/json", domains: []string{"hits", "basic"}, n: len(jsonBodies), run: func(ref, ours *service) string {
		seen := map[int]int{}
		for i, body := range jsonBodies {
			var ca, cb int
			var a, b string
			if !sameSecond(func() { ca, a = ref.postJSON(t, body); cb, b = ours.postJSON(t, body) }) {
				return fmt.Sprintf("request %d", i)
			}
			if ca != cb || (ca != 400 && a != b) {
				t.Errorf("/json %s\nreference:   %d %s\nratelua-rls: %d %s", body, ca, a, cb, b)
			}
			seen[ca]++
		}
		if seen[200] == 0 || seen[429] == 0 || seen[400] != 4 {
			t.Errorf("/json statuses %v, want 200, 429 and four 400", seen)
		}
		return ""
	}}
}

// flush empties the servers nodes (a single node, or a cluster's
// masters).
func flush(t *testing.T, nodes ...*testbench.Node) {
	t.Helper()
	for _, n := range nodes {
		if _, err := n.Do(context.Background(), "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAgainstReference runs envoyproxy/ratelimit and ratelua-rls, each on
// its own redis-server, with the configurations of testdata/config and the
// same seeded request streams, and compares every answer: overall code,
// statuses, limits, remaining and reset. A second pair runs with the
// global shadow mode and the reference's response headers.
func TestAgainstReference(t *testing.T) {
	bins, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		name string
		kind testbench.Kind
		env  []string
	}{
		{"defaults", testbench.Redis, nil},
		{"shadow-headers", testbench.Redis, []string{"SHADOW_MODE=true", "LIMIT_RESPONSE_HEADERS_ENABLED=true"}},
		{"valkey", testbench.Valkey, nil},
		// ratelua-rls with its deny cache and the fallback (the reference
		// ignores the variables): the same answers and statistics, the
		// hits the cache answered aside. (A share of 1: the configurations
		// hold rules of 1 a unit, which a smaller share rounds to 0.)
		{"deny-cache", testbench.Redis, []string{"RATELUA_DENY_CACHE=1000", "RATELUA_FALLBACK=1"}},
		// Issue 33 row 3: QUOTA_MODE and RESPONSE_DYNAMIC_METADATA were
		// ignored (112 of 200 answers OVER_LIMIT where the reference says
		// OK; the metadata dropped from every answer).
		{"quota-metadata", testbench.Redis, []string{"QUOTA_MODE=true", "RESPONSE_DYNAMIC_METADATA=true"}},
		// Issue 33 row 7: ratelua-rls on its own keys (the reference
		// ignores the variable), on both servers: the same answers.
		{"own-counters", testbench.Redis, []string{"RATELUA_SHARE_REFERENCE_COUNTERS=false"}},
		{"own-counters-valkey", testbench.Valkey, []string{"RATELUA_SHARE_REFERENCE_COUNTERS=false"}},
		// Issue 33 row 6: STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT was
		// refused; the streams' requests of several descriptors go over
		// one limit and not another.
		{"stop-increment", testbench.Redis, []string{stopIncrement}},
		{"stop-increment-valkey", testbench.Valkey, []string{stopIncrement}},
		// With ratelua-rls's deny cache: a descriptor it answers is over
		// its limit, so stops the others.
		{"stop-increment-deny-cache", testbench.Redis, []string{stopIncrement, "RATELUA_DENY_CACHE=1000", "RATELUA_FALLBACK=1"}},
		// Issue 33 row 6: LOCAL_CACHE_SIZE_IN_BYTES was refused. The
		// reference's local cache on both sides: a descriptor found over
		// its limit is over until its window ends, its hits never counted
		// on the server; on both servers, and with stopIncrement (a
		// descriptor the cache answers stops the others).
		{"local-cache", testbench.Redis, []string{localCache}},
		{"local-cache-valkey", testbench.Valkey, []string{localCache}},
		{"local-cache-stop", testbench.Redis, []string{localCache, stopIncrement}},
		// Issue 33 row 6: REDIS_PERSECOND was refused.
		// A run named persecond... gives each service a second server for
		// its limits of unit second; the counters on each server are then
		// compared too.
		{"persecond", testbench.Redis, nil},
		{"persecond-stop-valkey", testbench.Valkey, []string{stopIncrement}},
	}
	for i, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			refRedis := testbench.StartSingle(t, testbench.Options{Kind: run.kind})
			ourRedis := testbench.StartSingle(t, testbench.Options{Kind: run.kind})
			servers := []*testbench.Node{refRedis, ourRedis}
			refEnv, ourEnv := run.env, run.env
			var refSecond, ourSecond *testbench.Node
			perSecond := strings.HasPrefix(run.name, "persecond")
			if perSecond {
				refSecond = testbench.StartSingle(t, testbench.Options{Kind: run.kind})
				ourSecond = testbench.StartSingle(t, testbench.Options{Kind: run.kind})
				servers = append(servers, refSecond, ourSecond)
				refEnv = append(perSecondEnv(refSecond), run.env...)
				ourEnv = append(perSecondEnv(ourSecond), run.env...)
			}
			s := newSession(t, func() (*service, *service) {
				flush(t, servers...)
				return startService(t, "reference", bins["reference"], "testdata/config", refRedis.Addr, false, refEnv...),
					startService(t, "ratelua-rls", bins["ratelua-rls"], "testdata/config", ourRedis.Addr, false, ourEnv...)
			})
			units := streams(t, uint64(100*(i+1)), perDomain())
			if run.name == "defaults" {
				units = append(units, jsonUnit(t))
			}
			s.run(units...)
			if perSecond {
				compareKeys(t, "REDIS_URL", refRedis, ourRedis)
				comparePerSecond(t, refSecond, ourSecond)
			}
			n, rules := s.finish()
			t.Logf("%d requests, every answer the same; the statistics of %d rules the same; %d restarts", n, rules, s.restarts)
			reportCases(fmt.Sprintf("reference comparison, single node (%s), %s: %d requests agree, statistics of %d rules agree%s", run.kind, run.name, n, rules, s.restartNote()))
		})
	}
}

// localCache turns on the reference's local cache (1 MiB).
const localCache = "LOCAL_CACHE_SIZE_IN_BYTES=1048576"

// stopIncrement is the reference's setting that counts a request's hits
// only on the descriptors that go over their limits, when one does.
const stopIncrement = "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true"

// TestAgainstReferenceCluster does the same on two six-node clusters (3
// masters, 3 replicas) of redis-server, then of valkey-server, the
// reference in its cluster mode; then with
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT (RLS_COMPARE_CLUSTER_STOP=0
// leaves those out).
func TestAgainstReferenceCluster(t *testing.T) {
	bins, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		kind testbench.Kind
		env  []string
	}
	runs := []run{{testbench.Redis, nil}, {testbench.Valkey, nil}}
	if os.Getenv("RLS_COMPARE_CLUSTER_STOP") != "0" {
		runs = append(runs, run{testbench.Redis, []string{stopIncrement}}, run{testbench.Valkey, []string{stopIncrement}})
	}
	for _, r := range runs {
		kind := r.kind
		name := string(kind)
		if r.env != nil {
			name += "-stop-increment"
		}
		t.Run(name, func(t *testing.T) {
			refCluster := testbench.Start(t, testbench.Options{Kind: kind})
			ourCluster := testbench.Start(t, testbench.Options{Kind: kind})
			s := newSession(t, func() (*service, *service) {
				flush(t, append(refCluster.Masters(), ourCluster.Masters()...)...)
				return startService(t, "reference", bins["reference"], "testdata/config", strings.Join(refCluster.Addrs(), ","), true, r.env...),
					startService(t, "ratelua-rls", bins["ratelua-rls"], "testdata/config", strings.Join(ourCluster.Addrs(), ","), true, r.env...)
			})
			seed := uint64(7)
			if r.env != nil {
				seed = 8
			}
			s.run(streams(t, seed, perDomain())...)
			n, rules := s.finish()
			t.Logf("%d requests, every answer the same; the statistics of %d rules the same; %d restarts", n, rules, s.restarts)
			reportCases(fmt.Sprintf("reference comparison, six-node cluster (%s): %d requests agree, statistics of %d rules agree%s", name, n, rules, s.restartNote()))
		})
	}
}

// perDomain is the requests per configuration (RLS_COMPARE_REQUESTS, 150
// by default).
func perDomain() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("RLS_COMPARE_REQUESTS"), &n); err == nil && n > 0 {
		return n
	}
	return 150
}

// reportCases appends a line to the file RLS_REPORT names, if any.
func reportCases(line string) {
	path := os.Getenv("RLS_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}
