package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	confv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelua/ratelua/rls/internal/loopback"
	"github.com/ratelua/ratelua/rls/xds/xdstest"
	"github.com/ratelua/ratelua/testbench"
)

// referenceBinary builds envoyproxy/ratelimit's service at the version
// rls/reference pins (in that module, on its go.mod's graph, as make
// test-rls builds it there).
func referenceBinary(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ratelimit")
	cmd := exec.Command("go", "build", "-o", out, "github.com/envoyproxy/ratelimit/src/service_cmd")
	cmd.Dir = filepath.Join("..", "..", "reference")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the reference: %v\n%s", err, b)
	}
	return out
}

// xdsService is a rate-limit service taking its configuration from an
// xDS server.
type xdsService struct {
	name     string
	client   pb.RateLimitServiceClient
	log      string
	grpcAddr string
	done     chan struct{} // closed when the process exited
}

// startXDSService runs binary (args) with the reference's settings for
// CONFIG_TYPE=GRPC_XDS_SOTW on the xDS server at xdsAddr, as node
// "ratelimit" with the metadata service=name, on the server at redisAddr,
// and returns once it answers.
func startXDSService(t *testing.T, name, binary string, args []string, xdsAddr, redisAddr string, extra ...string) *xdsService {
	t.Helper()
	s := launchXDSService(t, name, binary, args, xdsAddr, redisAddr, extra...)
	s.waitAnswers(t)
	return s
}

// launchXDSService starts the process of startXDSService.
func launchXDSService(t *testing.T, name, binary string, args []string, xdsAddr, redisAddr string, extra ...string) *xdsService {
	t.Helper()
	dir := t.TempDir()
	grpcPort, httpPort, debugPort := loopback.FreePort(t), loopback.FreePort(t), loopback.FreePort(t)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(),
		"CONFIG_TYPE=GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL="+xdsAddr,
		"CONFIG_GRPC_XDS_NODE_ID=ratelimit", "CONFIG_GRPC_XDS_NODE_METADATA=service="+name,
		"RUNTIME_ROOT="+dir, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr, "REDIS_TYPE=SINGLE",
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort),
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(httpPort),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(debugPort),
		"USE_STATSD=false", "LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, extra...)
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s's log:\n%s", name, b)
		}
	})
	grpcAddr := "127.0.0.1:" + strconv.Itoa(grpcPort)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &xdsService{name: name, client: pb.NewRateLimitServiceClient(conn), log: logPath, grpcAddr: grpcAddr, done: done}
}

// waitAnswers waits until s answers a request (with an answer or with
// an error of its own: no configuration), failing if it exits.
func (s *xdsService) waitAnswers(t *testing.T) {
	t.Helper()
	ping := request("probe", 0, "version=none")
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.client.ShouldRateLimit(ctx, ping)
		cancel()
		if err == nil || status.Code(err) == codes.Unavailable && strings.Contains(err.Error(), "no rate limit configuration") {
			return
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(s.log)
			t.Fatalf("%s exited before answering: %s", s.name, b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(s.log)
			t.Fatalf("%s did not answer within 60 s: %v\n%s", s.name, err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// request is a request on domain with hits, one descriptor per
// "k=v,k=v" of descs.
func request(domain string, hits uint32, descs ...string) *pb.RateLimitRequest {
	req := &pb.RateLimitRequest{Domain: domain, HitsAddend: hits}
	for _, d := range descs {
		desc := &rlpb.RateLimitDescriptor{}
		for _, kv := range strings.Split(d, ",") {
			k, v, _ := strings.Cut(kv, "=")
			desc.Entries = append(desc.Entries, &rlpb.RateLimitDescriptor_Entry{Key: k, Value: v})
		}
		req.Descriptors = append(req.Descriptors, desc)
	}
	return req
}

// xdsAnswer is a response (or an error) in a form two services' compare
// in: the overall code and each status's code, limit, remaining and
// reset.
func xdsAnswer(resp *pb.RateLimitResponse, err error) string {
	if err != nil {
		return "error"
	}
	var b strings.Builder
	b.WriteString(resp.GetOverallCode().String())
	for i, s := range resp.GetStatuses() {
		fmt.Fprintf(&b, "\n  [%d] %s", i, s.GetCode())
		if l := s.GetCurrentLimit(); l != nil {
			fmt.Fprintf(&b, " limit=%d/%s name=%q", l.GetRequestsPerUnit(), l.GetUnit(), l.GetName())
		}
		fmt.Fprintf(&b, " remaining=%d", s.GetLimitRemaining())
		if d := s.GetDurationUntilReset(); d != nil {
			fmt.Fprintf(&b, " reset=%ds", d.GetSeconds())
		}
	}
	for _, h := range resp.GetResponseHeadersToAdd() {
		fmt.Fprintf(&b, "\n  header %s: %s", h.GetKey(), h.GetValue())
	}
	return b.String()
}

// rule is a descriptor limited to n per unit.
func rule(key, value string, n uint32, unit confv3.RateLimitUnit, children ...*confv3.RateLimitDescriptor) *confv3.RateLimitDescriptor {
	return &confv3.RateLimitDescriptor{Key: key, Value: value, Descriptors: children,
		RateLimit: &confv3.RateLimitPolicy{Unit: unit, RequestsPerUnit: n}}
}

// probe is the resource each version carries so that a client's use of
// it can be seen: a rule on version=v in the domain probe.
func probe(v string) *confv3.RateLimitConfig {
	return &confv3.RateLimitConfig{Name: "probe", Domain: "probe", Descriptors: []*confv3.RateLimitDescriptor{
		rule("version", v, 1_000_000, confv3.RateLimitUnit_HOUR)}}
}

const week = confv3.RateLimitUnit(7) // WEEK, which the module's v0.1.0 does not name

// xdsVersions are the states the xDS server goes through, as Envoy
// Gateway pushes them when its policies change: two domains of rules,
// then a changed rule, a rule removed, a domain added; two updates
// the services must refuse (a domain twice, a unit that is none), each
// leaving the last good state in use; then a domain removed.
func xdsVersions() []struct {
	version string
	good    bool
	why     string // a NACK's detail holds it (a bad state)
	configs []*confv3.RateLimitConfig
} {
	user := rule("user", "", 3, confv3.RateLimitUnit_HOUR)
	user.RateLimit.Name = "per-user"
	login := rule("path", "/login", 4, confv3.RateLimitUnit_HOUR, rule("user", "", 2, confv3.RateLimitUnit_HOUR))
	tiers := []*confv3.RateLimitDescriptor{rule("tier", "free", 5, confv3.RateLimitUnit_DAY),
		{Key: "tier", Value: "vip", RateLimit: &confv3.RateLimitPolicy{Unlimited: true}}}
	shadow := rule("shadow", "", 1, confv3.RateLimitUnit_HOUR)
	shadow.ShadowMode = true
	weekly := rule("weekly", "", 2, week)
	gw1 := &confv3.RateLimitConfig{Name: "gw", Domain: "gw", Descriptors: append([]*confv3.RateLimitDescriptor{user, login, shadow, weekly}, tiers...)}
	user2 := rule("user", "", 6, confv3.RateLimitUnit_HOUR)
	user2.RateLimit.Name = "per-user"
	replacing := rule("team", "", 1, confv3.RateLimitUnit_HOUR)
	replacing.RateLimit.Replaces = []*confv3.RateLimitReplace{{Name: "per-user"}}
	gw2 := &confv3.RateLimitConfig{Name: "gw", Domain: "gw", Descriptors: append([]*confv3.RateLimitDescriptor{user2, shadow, weekly, replacing}, tiers...)}
	other := &confv3.RateLimitConfig{Name: "other", Domain: "other", Descriptors: []*confv3.RateLimitDescriptor{
		rule("ip", "", 2, confv3.RateLimitUnit_MINUTE)}}
	dup := &confv3.RateLimitConfig{Name: "gw-again", Domain: "gw", Descriptors: []*confv3.RateLimitDescriptor{rule("user", "", 100, confv3.RateLimitUnit_HOUR)}}
	badUnit := &confv3.RateLimitConfig{Name: "gw", Domain: "gw", Descriptors: []*confv3.RateLimitDescriptor{rule("user", "", 100, confv3.RateLimitUnit_UNKNOWN)}}
	return []struct {
		version string
		good    bool
		why     string
		configs []*confv3.RateLimitConfig
	}{
		{"v1", true, "", []*confv3.RateLimitConfig{gw1, probe("v1")}},
		{"v2", true, "", []*confv3.RateLimitConfig{gw2, other, probe("v2")}},
		{"v3-duplicate-domain", false, "duplicate domain 'gw'", []*confv3.RateLimitConfig{gw2, other, dup, probe("v3-duplicate-domain")}},
		{"v4-unknown-unit", false, "invalid rate limit unit 'UNKNOWN'", []*confv3.RateLimitConfig{badUnit, other, probe("v4-unknown-unit")}},
		{"v5", true, "", []*confv3.RateLimitConfig{gw1, probe("v5")}},
	}
}

// xdsRequests are n requests from a seeded generator over the
// descriptors every version configures or not, on the domains gw and
// other and one no version has.
func xdsRequests(seed uint64, n int) []*pb.RateLimitRequest {
	r := rand.New(rand.NewPCG(seed, 33))
	pool := []string{"user=u1", "user=u2", "path=/login", "path=/login,user=u1", "path=/other", "tier=free", "tier=vip",
		"shadow=s", "weekly=w", "team=t1", "team=t1,user=u1", "ip=10.0.0.1", "nothing=x"}
	domains := []string{"gw", "gw", "gw", "other", "nowhere"}
	reqs := make([]*pb.RateLimitRequest, n)
	for i := range reqs {
		var descs []string
		for range 1 + r.IntN(3) {
			descs = append(descs, pool[r.IntN(len(pool))])
		}
		reqs[i] = request(domains[r.IntN(len(domains))], []uint32{0, 1, 1, 2, 3}[r.IntN(5)], descs...)
		if r.IntN(5) == 0 {
			reqs[i].Descriptors[0].HitsAddend = wrapperspb.UInt64(uint64(r.IntN(3)))
		}
	}
	return reqs
}

// inSecond runs f where it can end in the second it starts (waiting for
// the next second when less than 200 ms are left), and reports whether it
// did: both services then saw one time for every window.
func inSecond(f func()) bool {
	if now := time.Now(); now.Nanosecond() > 800_000_000 {
		time.Sleep(time.Duration(1_000_000_000-now.Nanosecond())*time.Nanosecond + 2*time.Millisecond)
	}
	start := time.Now().Unix()
	f()
	return time.Now().Unix() == start
}

// TestXDSAgainstReference: an xDS server (go-control-plane's server and
// snapshot cache, as Envoy Gateway runs) feeds envoyproxy/ratelimit and
// ratelua-rls, both with CONFIG_TYPE=GRPC_XDS_SOTW, one state after
// another. After each good state both ACK it and answer the same stream
// of requests identically; a state with a domain twice, and one with a
// unit that is none, are NACKed by both, naming the error, and both keep
// answering as before. Before the first bad state the xDS server restarts:
// both open a new stream. On redis-server and valkey-server, single node
// and six-node cluster.
func TestXDSAgainstReference(t *testing.T) {
	ref := referenceBinary(t)
	for _, b := range []struct {
		kind    testbench.Kind
		cluster bool
	}{{testbench.Redis, false}, {testbench.Valkey, false}, {testbench.Redis, true}, {testbench.Valkey, true}} {
		name := string(b.kind)
		if b.cluster {
			name += "-cluster"
		}
		t.Run(name, func(t *testing.T) {
			// Each service on its own server, or its own six-node cluster
			// (the reference in its cluster mode); nodes are what a
			// comparison flushes.
			var refAddr, ourAddr string
			var nodes []*testbench.Node
			var redisType []string
			if b.cluster {
				refCluster, ourCluster := testbench.Start(t, testbench.Options{Kind: b.kind}), testbench.Start(t, testbench.Options{Kind: b.kind})
				refAddr, ourAddr = strings.Join(refCluster.Addrs(), ","), strings.Join(ourCluster.Addrs(), ",")
				nodes = append(refCluster.Masters(), ourCluster.Masters()...)
				redisType = []string{"REDIS_TYPE=CLUSTER"}
			} else {
				refRedis := testbench.StartSingle(t, testbench.Options{Kind: b.kind})
				ourRedis := testbench.StartSingle(t, testbench.Options{Kind: b.kind})
				refAddr, ourAddr = refRedis.Addr, ourRedis.Addr
				nodes = []*testbench.Node{refRedis, ourRedis}
			}
			srv := xdstest.Start(t)
			versions := xdsVersions()
			srv.Set(t, "ratelimit", versions[0].version, versions[0].configs...)
			// The reference retries a broken stream after XDS_CLIENT_BACKOFF_*;
			// small here, nothing breaks in this test.
			backoff := []string{"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL=100ms", "XDS_CLIENT_BACKOFF_MAX_INTERVAL=1s"}
			services := []*xdsService{
				startXDSService(t, "reference", ref, nil, srv.Addr, refAddr, append(backoff, redisType...)...),
				startXDSService(t, "ratelua-rls", os.Args[0], []string{"-test.run=^$"}, srv.Addr, ourAddr,
					append(append(backoff, redisType...), "RATELUA_RLS_MAIN=1")...),
			}
			lastGood := ""
			for vi, v := range versions {
				if v.version == "v3-duplicate-domain" {
					// The xDS server goes away and comes back (a control
					// plane's restart): both open a new stream.
					// (The reference's first request on its new stream
					// carries the old stream's last nonce: a new stream is
					// told by its id.)
					var last int64
					for _, r := range srv.Requests() {
						last = max(last, r.Stream)
					}
					srv.Restart(t)
					for _, s := range services {
						srv.WaitFor(t, 0, s.name+"'s new stream", func(r xdstest.Request) bool {
							return r.Stream > last && xdstest.MetadataIs("service", s.name)(r)
						})
					}
				}
				if vi > 0 {
					srv.Set(t, "ratelimit", v.version, v.configs...)
				}
				for _, s := range services {
					answer := srv.WaitAnswer(t, v.version, xdstest.MetadataIs("service", s.name))
					if v.good {
						if !answer.ACK(v.version) {
							t.Fatalf("%s answered %s with %v, want an ACK", s.name, v.version, answer)
						}
						waitProbe(t, s, v.version, true)
					} else {
						nack := answer
						if !nack.NACK(v.version) {
							t.Fatalf("%s answered %s, which does not load, with %v: want a NACK", s.name, v.version, nack)
						}
						if nack.GetVersionInfo() != lastGood {
							t.Errorf("%s's NACK of %s names version %q, want the last good one, %s", s.name, v.version, nack.GetVersionInfo(), lastGood)
						}
						if msg := nack.GetErrorDetail().GetMessage(); !strings.Contains(msg, v.why) {
							t.Errorf("%s's NACK of %s says %q, want it to name the error: %s", s.name, v.version, msg, v.why)
						}
						t.Logf("%s refused %s: %s", s.name, v.version, nack.GetErrorDetail().GetMessage())
						waitProbe(t, s, v.version, false)
						waitProbe(t, s, lastGood, true)
					}
				}
				if v.good {
					lastGood = v.version
				}
				n := compareXDS(t, services[0], services[1], nodes, uint64(vi+1), 120)
				t.Logf("%s (%s): %d requests, every answer the same", v.version, map[bool]string{true: "applied", false: "refused"}[v.good], n)
			}
		})
	}
}

// waitProbe waits until s answers a request on the probe of version v
// with its rule (in, the version in use) or without (not in use).
func waitProbe(t *testing.T, s *xdsService, v string, in bool) {
	t.Helper()
	deadline := time.Now().Add(xdstest.Wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := s.client.ShouldRateLimit(ctx, request("probe", 0, "version="+v))
		cancel()
		if err == nil && len(resp.GetStatuses()) == 1 {
			if (resp.GetStatuses()[0].GetCurrentLimit() != nil) == in {
				return
			}
			if !in {
				t.Fatalf("%s answers the probe of %s, which it refused, with its rule: %v", s.name, v, resp)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not use version %s %v after ACKing it: %v %v", s.name, v, xdstest.Wait, resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// compareXDS sends a seeded stream of n requests to both services, pair
// by pair, on flushed servers, and fails on the first answer that
// differs. A pair that straddles a second (the services may have seen two
// windows) starts the stream again on flushed servers, at most 5 times.
// It returns the requests compared.
func compareXDS(t *testing.T, ref, ours *xdsService, nodes []*testbench.Node, seed uint64, n int) int {
	t.Helper()
	reqs := xdsRequests(seed, n)
	for attempt := 0; attempt < 5; attempt++ {
		for _, node := range nodes {
			if _, err := node.Do(context.Background(), "FLUSHALL"); err != nil {
				t.Fatal(err)
			}
		}
		straddled := false
		codes := map[string]int{}
		for i, req := range reqs {
			var a, b string
			if !inSecond(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				a = xdsAnswer(ref.client.ShouldRateLimit(ctx, req))
				b = xdsAnswer(ours.client.ShouldRateLimit(ctx, req))
			}) {
				t.Logf("request %d: the pair straddles a second; the stream again on flushed servers", i)
				straddled = true
				break
			}
			if a != b {
				t.Fatalf("request %d differs (seed %d)\nrequest: %s\nreference:   %s\nratelua-rls: %s", i, seed, prototext.Format(req), a, b)
			}
			codes[strings.SplitN(a, "\n", 2)[0]]++
		}
		if !straddled {
			if codes["OK"] == 0 || codes["OVER_LIMIT"] == 0 {
				t.Errorf("answers %v: want some OK and some OVER_LIMIT", codes)
			}
			return len(reqs)
		}
	}
	t.Fatal("5 streams straddled a second")
	return 0
}

// TestXDSStartWaitsForTheFirstUpdate: with CONFIG_TYPE=GRPC_XDS_SOTW,
// ratelua-rls subscribes and, as the reference, does not listen until the
// xDS server's first update (here: while the server holds nothing for its
// node, its gRPC port refuses connections); once the server has a state,
// it serves it. With FORCE_START_WITHOUT_INITIAL_CONFIG=true it listens at
// once, answering Unavailable (no configuration) until the first update.
func TestXDSStartWaitsForTheFirstUpdate(t *testing.T) {
	redis := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			srv := xdstest.Start(t)
			name := fmt.Sprintf("ratelua-rls-%v", force)
			s := launchXDSService(t, name, os.Args[0], []string{"-test.run=^$"}, srv.Addr, redis.Addr,
				"RATELUA_RLS_MAIN=1", fmt.Sprintf("FORCE_START_WITHOUT_INITIAL_CONFIG=%v", force))
			srv.WaitFor(t, 0, name+"'s subscription", xdstest.MetadataIs("service", name))
			if force {
				s.waitAnswers(t)
				_, err := s.client.ShouldRateLimit(context.Background(), request("probe", 0, "version=v1"))
				if status.Code(err) != codes.Unavailable {
					t.Fatalf("before the first update: %v, want Unavailable (no configuration)", err)
				}
			} else if c, err := net.Dial("tcp", s.grpcAddr); err == nil {
				c.Close()
				t.Fatal("the gRPC port accepts connections before the first xDS update")
			}
			srv.Set(t, "ratelimit", "v1", probe("v1"))
			s.waitAnswers(t)
			waitProbe(t, s, "v1", true)
		})
	}
}
