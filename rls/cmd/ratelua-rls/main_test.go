package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/ratelua/ratelua/rls/internal/loopback"
	"github.com/ratelua/ratelua/rls/settings"
	"github.com/ratelua/ratelua/testbench"
)

// TestMain runs the command itself when RATELUA_RLS_MAIN is set, so that
// a test can run it as a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv("RATELUA_RLS_MAIN") == "1" {
		os.Exit(run(nil, os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// gate is a TCP proxy to a server that can hold script calls: while
// closed, what a client sends from a script call on (EVALSHA or EVAL) is
// kept (and the call reported on held) until it opens; handshakes and
// pings go through.
type gate struct {
	ln     net.Listener
	target string
	held   chan []byte

	mu     sync.Mutex
	closed bool
	open   chan struct{}
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, target: target, held: make(chan []byte, 16), open: make(chan struct{})}
	close(g.open)
	t.Cleanup(func() { ln.Close() })
	go g.serve()
	return g
}

func (g *gate) addr() string { return g.ln.Addr().String() }

// close makes the gate hold what clients send next.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed, g.open = true, make(chan struct{})
}

// release lets what is held through, and what follows.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.closed = false
		close(g.open)
	}
}

func (g *gate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", g.target)
		if err != nil {
			c.Close()
			continue
		}
		go func() { _, _ = io.Copy(c, s); c.Close() }()
		type chunk struct {
			b    []byte
			hold bool
		}
		chunks := make(chan chunk, 1024)
		go func() {
			defer close(chunks)
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					ch := chunk{b: bytes.Clone(buf[:n])}
					g.mu.Lock()
					if g.closed && bytes.Contains(ch.b, []byte("EVAL")) {
						ch.hold = true
						select {
						case g.held <- ch.b:
						default:
						}
					}
					g.mu.Unlock()
					chunks <- ch
				}
				if err != nil {
					return
				}
			}
		}()
		go func() {
			defer s.Close()
			for ch := range chunks {
				for ch.hold {
					g.mu.Lock()
					closed, open := g.closed, g.open
					g.mu.Unlock()
					if !closed {
						break
					}
					<-open
				}
				if _, err := s.Write(ch.b); err != nil {
					return
				}
			}
		}()
	}
}

// collector is an OTLP/HTTP metrics receiver: it keeps every export.
type collector struct {
	mu      sync.Mutex
	exports []*colmetrics.ExportMetricsServiceRequest
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	var req colmetrics.ExportMetricsServiceRequest
	if err != nil || r.URL.Path != "/v1/metrics" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "not an OTLP metrics export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.exports = append(c.exports, &req)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
	_, _ = w.Write(out)
}

// sum is the sum of the data points of the counter name with the rule
// attribute rule, over every export.
func (c *collector) sum(name, rule string) (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	for _, e := range c.exports {
		for _, rm := range e.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != name || m.GetSum() == nil {
						continue
					}
					for _, dp := range m.GetSum().DataPoints {
						for _, kv := range dp.Attributes {
							if kv.Key == "ratelua.rls.rule" && kv.Value.GetStringValue() == rule {
								total += dp.GetAsInt()
							}
						}
					}
				}
			}
		}
	}
	return total, len(c.exports)
}

// TestSIGTERMStopsGracefully runs ratelua-rls as a process on a server
// behind a gate, holds the server's side of a request, and sends SIGTERM
// while the request is in flight: the health check fails and new
// connections are refused at once, the request finishes with its answer
// when the server answers, the process exits 0, and its statistics reach
// the OTLP collector at shutdown (the export interval is an hour).
func TestSIGTERMStopsGracefully(t *testing.T) {
	node := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	g := newGate(t, node.Addr)
	col := &collector{}
	otlp := httptest.NewServer(col)
	t.Cleanup(otlp.Close)

	root := t.TempDir()
	dir := filepath.Join(root, "rl", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	config := "domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	grpcPort, httpPort := loopback.FreePort(t), loopback.FreePort(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RATELUA_RLS_MAIN=1",
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=rl",
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+g.addr(),
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort),
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(httpPort),
		"OTEL_METRICS_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.URL,
		"OTEL_METRIC_EXPORT_INTERVAL=3600000")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("ratelua-rls's log:\n%s", logs.String())
		}
	})

	health := func() int {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(httpPort) + "/healthcheck")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(30 * time.Second)
	for health() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("ratelua-rls did not become healthy within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	grpcAddr := "127.0.0.1:" + strconv.Itoa(grpcPort)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	req := &pb.RateLimitRequest{Domain: "app", HitsAddend: 2, Descriptors: []*rlpb.RateLimitDescriptor{
		{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "user", Value: "u1"}}}}}

	// The request in flight: its script call is held at the gate.
	g.close()
	type result struct {
		resp *pb.RateLimitResponse
		err  error
	}
	answered := make(chan result, 1)
	go func() {
		resp, err := client.ShouldRateLimit(context.Background(), req)
		answered <- result{resp, err}
	}()
	for held := false; !held; {
		select {
		case b := <-g.held:
			held = bytes.Contains(b, []byte("EVALSHA"))
		case r := <-answered:
			t.Fatalf("the request was answered with the gate closed: %v, %v", r.resp, r.err)
		case <-time.After(30 * time.Second):
			t.Fatal("the request's script call did not reach the gate within 30 s")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Draining: unhealthy, no new connection, the request still waiting.
	deadline = time.Now().Add(10 * time.Second)
	for health() != http.StatusInternalServerError {
		if time.Now().After(deadline) {
			t.Fatal("the health check did not fail within 10 s of SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, err := net.DialTimeout("tcp", grpcAddr, time.Second); err == nil {
		c.Close()
		t.Error("the gRPC port accepts connections while draining")
	}
	select {
	case r := <-answered:
		t.Fatalf("the request ended before the server answered: %v, %v", r.resp, r.err)
	case err := <-exited:
		t.Fatalf("the process exited with a request in flight: %v", err)
	default:
	}

	g.release()
	select {
	case r := <-answered:
		if r.err != nil || r.resp.OverallCode != pb.RateLimitResponse_OK || r.resp.Statuses[0].LimitRemaining != 3 {
			t.Fatalf("the request in flight: %v, %v; want OK with 3 left", r.resp, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request in flight did not finish within 30 s of the server's answer")
	}
	select {
	case err := <-exited:
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("exit code %d, want 0", ee.ExitCode())
			}
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the process did not exit within 30 s")
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("the log does not say it stopped:\n%s", logs.String())
	}
	if hits, exports := col.sum("ratelua.rls.total_hits", "app.user"); hits != 2 {
		t.Errorf("the collector got total_hits %d for app.user in %d exports, want 2 (exported at shutdown)", hits, exports)
	}
}

// sampleValue is a value of a setting's type for a test: its default, or
// one that parses.
func sampleValue(s settings.Setting) string {
	if s.Default != "" {
		return s.Default
	}
	switch s.Parser {
	case "int":
		return "1"
	case "map":
		return "team:rl"
	case "list":
		return "a,b"
	}
	return "x"
}

// TestUnusedSettingsStartAndLogOnce (issue 33 row 3): every Unused setting
// of the table (pool sizes, pipelining, the debug port, the settings of a
// refused feature), given at once, starts the command as a user runs it:
// it serves (healthy, a request answered), and its log names each setting
// exactly once as not used.
func TestUnusedSettingsStartAndLogOnce(t *testing.T) {
	node := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	root := t.TempDir()
	dir := filepath.Join(root, "rl", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte("domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	grpcPort, httpPort := loopback.FreePort(t), loopback.FreePort(t)
	environ := append(os.Environ(), "RATELUA_RLS_MAIN=1",
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=rl",
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+node.Addr, "USE_STATSD=false",
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort),
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(httpPort))
	var unused []string
	for _, s := range settings.Table() {
		if s.Status == settings.Unused {
			unused = append(unused, s.Name)
			environ = append(environ, s.Name+"="+sampleValue(s))
		}
	}
	if len(unused) < 20 {
		t.Fatalf("the table has %d unused settings, want at least 20", len(unused))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = environ
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(grpcPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	req := &pb.RateLimitRequest{Domain: "app", Descriptors: []*rlpb.RateLimitDescriptor{{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "user", Value: "u1"}}}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := client.ShouldRateLimit(ctx, req)
		cancel()
		if err == nil {
			if resp.OverallCode != pb.RateLimitResponse_OK || resp.Statuses[0].LimitRemaining != 4 {
				t.Fatalf("answer %v, want OK with 4 left", resp)
			}
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("ratelua-rls exited (%v) with every unused setting given:\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("ratelua-rls did not answer within 30 s: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the process did not exit within 30 s of SIGTERM")
	}
	log := logs.String()
	for _, name := range unused {
		if n := strings.Count(log, `msg="setting not used" name=`+name+" "); n != 1 {
			t.Errorf("%s: logged as not used %d times, want once", name, n)
		}
	}
	if t.Failed() {
		t.Logf("ratelua-rls's log:\n%s", log)
	}
}

// syncBuffer is a bytes.Buffer a process writes while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
