package reference

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ratelua/ratelua/rls/internal/loopback"
)

// binariesDir is the directory binaries builds into, once it did;
// TestMain removes it.
var binariesDir string

// binaries builds, once per test binary, the reference's service and
// ratelua-rls into one directory.
var binaries = sync.OnceValues(func() (map[string]string, error) {
	dir, err := os.MkdirTemp("", "rls-reference-bin-")
	if err != nil {
		return nil, err
	}
	binariesDir = dir
	out := map[string]string{
		"reference":   filepath.Join(dir, "ratelimit"),
		"ratelua-rls": filepath.Join(dir, "ratelua-rls"),
	}
	pkgs := map[string]string{
		"reference":   "github.com/envoyproxy/ratelimit/src/service_cmd",
		"ratelua-rls": "github.com/ratelua/ratelua/rls/cmd/ratelua-rls",
	}
	for name, pkg := range pkgs {
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", out[name], pkg)
		cmd.Env = os.Environ()
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		fmt.Fprintf(os.Stderr, "built %s in %v\n", name, time.Since(start).Round(time.Millisecond))
	}
	return out, nil
})

// service is one running rate-limit service.
type service struct {
	name      string
	denyCache bool // RATELUA_DENY_CACHE is set
	// localCache: LOCAL_CACHE_SIZE_IN_BYTES is set (the reference's local
	// cache, whose over_limit_with_local_cache is compared)
	localCache bool
	client     pb.RateLimitServiceClient
	http       int
	log        string
	stop       func() // stops the process (once; the test's end too)
}

// startService runs binary with the reference's settings on redisURL
// (comma-separated for a cluster), the configuration files of configDir,
// and extra environment variables.
func startService(t testing.TB, name, binary, configDir, redisURL string, cluster bool, extra ...string) *service {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "ratelimit"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(root, "ratelimit", "config"), os.DirFS(configDir)); err != nil {
		t.Fatal(err)
	}
	grpcPort, httpPort, debugPort := loopback.FreePort(t), loopback.FreePort(t), loopback.FreePort(t)
	redisType := "SINGLE"
	if cluster {
		redisType = "CLUSTER"
	}
	env := append(os.Environ(),
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisURL, "REDIS_TYPE="+redisType,
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort),
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(httpPort),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(debugPort),
		// The reference's statistics go to its log (gostats' logging
		// sink), flushed four times a second: readStats sums them.
		"USE_STATSD=false", "STATS_FLUSH_INTERVAL=250ms", "LOG_LEVEL=warn",
	)
	env = append(env, extra...)
	logPath := filepath.Join(root, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	stop := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	t.Cleanup(stop)
	conn, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &service{name: name, client: pb.NewRateLimitServiceClient(conn), http: httpPort, log: logPath, stop: stop}
	for _, e := range extra {
		s.denyCache = s.denyCache || strings.HasPrefix(e, "RATELUA_DENY_CACHE=")
		s.localCache = s.localCache || strings.HasPrefix(e, "LOCAL_CACHE_SIZE_IN_BYTES=")
	}
	ping := &pb.RateLimitRequest{Domain: "basic", Descriptors: []*rlpb.RateLimitDescriptor{{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "readiness", Value: "probe"}}}}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.client.ShouldRateLimit(ctx, ping)
		cancel()
		if err == nil {
			return s
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited before answering: %s", name, b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s did not answer within 60 s: %v\n%s", name, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stats returns a service's statistics per rule: the reference's summed
// from the flushes in its log, once two more flushes have ended since the
// call (so every request before it is counted); ratelua-rls's from /stats.
func (s *service) stats(t testing.TB) map[string]map[string]uint64 {
	t.Helper()
	out := map[string]map[string]uint64{}
	if s.name != "reference" {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(s.http) + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	flushes := func() (int, []byte) {
		b, err := os.ReadFile(s.log)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte(`"msg":"flushing all stats"`)), b
	}
	start, _ := flushes()
	deadline := time.Now().Add(10 * time.Second)
	var log []byte
	for {
		var n int
		n, log = flushes()
		if n >= start+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reference flushed its statistics %d times in 10 s", n-start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	const prefix = "ratelimit.service.rate_limit."
	for _, line := range bytes.Split(log, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"msg":"flushing counter"`)) {
			continue
		}
		var l struct {
			JSON struct{ Name, Value string } `json:"json"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("a line of the reference's statistics: %v: %s", err, line)
		}
		rest, ok := strings.CutPrefix(l.JSON.Name, prefix)
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		v, err := strconv.ParseFloat(l.JSON.Value, 64)
		if i < 0 || err != nil {
			t.Fatalf("a counter of the reference's statistics: %s", line)
		}
		rule, stat := rest[:i], rest[i+1:]
		if out[rule] == nil {
			out[rule] = map[string]uint64{}
		}
		out[rule][stat] += uint64(v)
	}
	return out
}

// compareStats fails when the two services' statistics differ for a rule
// of one of domains and a statistic of the reference's (a missing one
// counts 0). It returns the rules compared and the hits ratelua-rls's
// deny cache answered.
func compareStats(t *testing.T, ref, ours *service, domains []string) (int, uint64) {
	t.Helper()
	if len(domains) == 0 {
		return 0, 0
	}
	a, b := ref.stats(t), ours.stats(t)
	rules := map[string]bool{}
	for k := range a {
		rules[k] = true
	}
	for k := range b {
		rules[k] = true
	}
	names := []string{"total_hits", "over_limit", "near_limit", "within_limit", "shadow_mode", "over_limit_with_local_cache"}
	n := 0
	cached := uint64(0)
	for rule := range rules {
		if strings.HasSuffix(rule, "domain_not_found") || !inDomains(rule, domains) {
			continue
		}
		cached += b[rule]["over_limit_with_local_cache"]
		for _, name := range names {
			if name == "over_limit_with_local_cache" && ours.denyCache {
				continue
			}
			if a[rule][name] != b[rule][name] {
				t.Errorf("statistic %s.%s: reference %d, ratelua-rls %d", rule, name, a[rule][name], b[rule][name])
			}
		}
		n++
	}
	return n, cached
}

// inDomains reports whether the statistics name rule is of one of
// domains.
func inDomains(rule string, domains []string) bool {
	for _, d := range domains {
		if rule == d || strings.HasPrefix(rule, d+".") {
			return true
		}
	}
	return false
}

// postJSON sends body to a service's /json endpoint and returns the HTTP
// status and, when the body is a response, the response as answer shows
// it.
func (s *service) postJSON(t testing.TB, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(s.http)+"/json", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return resp.StatusCode, "not JSON: " + ct
	}
	var r pb.RateLimitResponse
	if err := protojson.Unmarshal(b, &r); err != nil {
		return resp.StatusCode, "not a response: " + err.Error()
	}
	return resp.StatusCode, answer(&r, nil)
}

// answer is a response (or error) in a form two services' can be compared in.
func answer(resp *pb.RateLimitResponse, err error) string {
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
	if md := resp.GetDynamicMetadata(); md != nil {
		fmt.Fprintf(&b, "\n  metadata %s", metadataText(md.AsMap()))
	}
	return b.String()
}

// metadataText is dynamic metadata as JSON with sorted keys, a
// descriptor's limit (protobuf's text, whose spacing varies from run to
// run) with its spaces made single.
func metadataText(md map[string]any) string {
	if descs, ok := md["descriptors"].([]any); ok {
		for _, d := range descs {
			if m, ok := d.(map[string]any); ok {
				if l, ok := m["limit"].(string); ok {
					m["limit"] = strings.Join(strings.Fields(l), " ")
				}
			}
		}
	}
	b, err := json.Marshal(md)
	if err != nil {
		return "unmarshalable: " + err.Error()
	}
	return string(b)
}

// sameSecond runs f at a point where it can finish within the current
// second: it waits for the next second when less than 200 ms are left, and
// reports whether f started and ended in one second, so that both services
// see one time for every window (the reference reads the process clock,
// ratelua-rls's reference rules too).
func sameSecond(f func()) bool {
	if now := time.Now(); now.Nanosecond() > 800_000_000 {
		time.Sleep(time.Duration(1_000_000_000-now.Nanosecond())*time.Nanosecond + 2*time.Millisecond)
	}
	start := time.Now().Unix()
	f()
	return time.Now().Unix() == start
}

// TestMain runs the tests, then removes the binaries they built (two
// services, about 76 MB a run, which stayed in the temporary directory).
func TestMain(m *testing.M) {
	code := m.Run()
	if binariesDir != "" {
		os.RemoveAll(binariesDir)
	}
	os.Exit(code)
}
