package statsref

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ratelua/ratelua/rls/internal/loopback"
)

// binariesDir is the directory binaries builds into, once it did;
// TestMain removes it.
var binariesDir string

// binaries builds, once per test binary, the reference's service and
// ratelua-rls into one directory.
var binaries = sync.OnceValues(func() (map[string]string, error) {
	dir, err := os.MkdirTemp("", "rls-statsref-bin-")
	if err != nil {
		return nil, err
	}
	binariesDir = dir
	pkgs := map[string]string{
		"reference":   "github.com/envoyproxy/ratelimit/src/service_cmd",
		"ratelua-rls": "github.com/ratelua/ratelua/rls/cmd/ratelua-rls",
	}
	out := map[string]string{}
	for name, pkg := range pkgs {
		out[name] = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out[name], pkg)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	return out, nil
})

// service is one running rate-limit service.
type service struct {
	name   string
	debug  int // DEBUG_PORT
	client pb.RateLimitServiceClient
	config string // its configuration directory
	log    string
	done   chan struct{}
}

// startService runs binary with the reference's settings on redisAddr
// (comma-separated seeds, with REDIS_TYPE=CLUSTER among extra, for a
// cluster), the configuration files of configDir and extra environment
// variables, and returns once its health check answers OK.
func startService(t *testing.T, name, binary, configDir, redisAddr string, extra ...string) *service {
	t.Helper()
	root := t.TempDir()
	config := filepath.Join(root, "ratelimit", "config")
	if err := os.CopyFS(config, os.DirFS(configDir)); err != nil {
		t.Fatal(err)
	}
	grpcPort, httpPort, debugPort := loopback.FreePort(t), loopback.FreePort(t), loopback.FreePort(t)
	env := append(os.Environ(),
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr, "REDIS_TYPE=SINGLE",
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort),
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(httpPort),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(debugPort),
		"LOG_LEVEL=warn", "STATS_FLUSH_INTERVAL=200ms",
	)
	env = append(env, extra...)
	s := &service{name: name, debug: debugPort, config: config, log: filepath.Join(root, name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); logFile.Close(); close(s.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	conn, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s.client = pb.NewRateLimitServiceClient(conn)
	// Ready when the health check says OK: not a ShouldRateLimit probe,
	// which would count in the statistics compared.
	health := "http://127.0.0.1:" + strconv.Itoa(httpPort) + "/healthcheck"
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-s.done:
			t.Fatalf("%s exited before answering: %s", name, s.logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy within 60 s: %v\n%s", name, err, s.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The gRPC listener may open just after the HTTP one: wait for the
	// connection, without a call.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn.Connect()
	for st := conn.GetState(); st.String() != "READY"; st = conn.GetState() {
		if !conn.WaitForStateChange(ctx, st) {
			t.Fatalf("%s: gRPC not ready within 60 s", name)
		}
	}
	return s
}

func (s *service) logText() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// call sends req and returns the error (the statistics, not the answers,
// are compared here).
func (s *service) call(req *pb.RateLimitRequest) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.client.ShouldRateLimit(ctx, req, grpc.WaitForReady(true))
	return err
}

// statsdListener receives a service's statsd or dogstatsd lines: over UDP
// the lines of every datagram, in order (the reference's client may cut a
// line between two datagrams: the datagrams are read as one stream), over
// TCP the lines of every connection.
type statsdListener struct {
	portNum int
	mu      sync.Mutex
	lines   []string
	part    string
}

// add appends a chunk of the stream (a datagram, or what a read of a
// connection returned), keeping a cut line for the next chunk.
func (l *statsdListener) add(part *string, b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	text := *part + string(b)
	i := strings.LastIndexByte(text, '\n')
	if i >= 0 {
		l.lines = append(l.lines, strings.Split(text[:i], "\n")...)
	}
	*part = text[i+1:]
}

// listenStatsd listens on a loopback port over network (udp or tcp).
func listenStatsd(t *testing.T, network string) *statsdListener {
	t.Helper()
	l := &statsdListener{}
	if network == "tcp" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		l.portNum = ln.Addr().(*net.TCPAddr).Port
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { conn.Close() })
				go func() {
					var part string
					buf := make([]byte, 65536)
					for {
						n, err := conn.Read(buf)
						l.add(&part, buf[:n])
						if err != nil {
							return
						}
					}
				}()
			}
		}()
		return l
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadBuffer(8 << 20)
	t.Cleanup(func() { c.Close() })
	l.portNum = c.LocalAddr().(*net.UDPAddr).Port
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			l.add(&l.part, buf[:n])
		}
	}()
	return l
}

func (l *statsdListener) port() string { return strconv.Itoa(l.portNum) }

// metric is what a name received over a run: the counters' increases
// summed, the gauges' and timers' lines counted.
type metric struct {
	kind  string // c, g or ms
	sum   uint64
	lines int
	tags  string // dogstatsd: the tags, sorted
}

// metrics sums the lines received so far by name (with its dogstatsd
// tags), leaving out DataDog's client's own telemetry.
func (l *statsdListener) metrics(t *testing.T) map[string]*metric {
	t.Helper()
	l.mu.Lock()
	lines := append([]string(nil), l.lines...)
	l.mu.Unlock()
	out := map[string]*metric{}
	for _, line := range lines {
		if line == "" || strings.HasPrefix(line, "datadog.") {
			continue
		}
		name, rest, ok := strings.Cut(line, ":")
		fields := strings.Split(rest, "|")
		if !ok || len(fields) < 2 {
			t.Fatalf("a statsd line: %q", line)
		}
		var tags string
		for _, f := range fields[2:] {
			if tail, ok := strings.CutPrefix(f, "#"); ok {
				ts := strings.Split(tail, ",")
				sort.Strings(ts)
				tags = strings.Join(ts, ",")
			}
			// |c:<container id> (DataDog's client in a container) and
			// |@rate are not compared.
		}
		key := name
		if tags != "" {
			key += " #" + tags
		}
		m := out[key]
		if m == nil {
			m = &metric{kind: fields[1], tags: tags}
			out[key] = m
		}
		if m.kind != fields[1] {
			t.Fatalf("%s sent as %s and %s", name, m.kind, fields[1])
		}
		m.lines++
		if m.kind == "c" {
			v, err := strconv.ParseFloat(fields[0], 64)
			if err != nil {
				t.Fatalf("a counter's value: %q", line)
			}
			m.sum += uint64(v)
		}
	}
	return out
}

// scrape returns a Prometheus endpoint's samples by "name{labels}" (the
// labels sorted as the exposition writes them) and each family's type.
func scrape(t *testing.T, url string) (map[string]string, map[string]string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	samples, types := map[string]string{}, map[string]string{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		l := string(line)
		if f, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			types[name] = typ
			continue
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		samples[sortLabels(l[:i])] = l[i+1:]
	}
	return samples, types
}

// sortLabels writes a sample's labels in name order.
func sortLabels(s string) string {
	name, labels, ok := strings.Cut(s, "{")
	if !ok {
		return s
	}
	parts := strings.Split(strings.TrimSuffix(labels, "}"), ",")
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// waitFor polls cond (every 50 ms, up to 60 s) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 60 s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// avoidMidnight waits, when the UTC day ends within two minutes, for the
// next day: the rules count per day, and both services must see one
// window.
func avoidMidnight() {
	now := time.Now().UTC()
	next := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	if next.Sub(now) < 2*time.Minute {
		time.Sleep(next.Sub(now) + time.Second)
	}
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
