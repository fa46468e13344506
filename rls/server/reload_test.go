package server

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/rueidis"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/internal/loopback"
	"github.com/ratelua/ratelua/rls/settings"
	"github.com/ratelua/ratelua/testbench"
)

// runServer runs a Server (Run: its listeners and its reload loop, every
// 20 ms) on a redis-server, with the configuration directory it returns,
// until the test ends.
func runServer(t *testing.T, s settings.Settings) (*Server, string, *testbench.Node) {
	t.Helper()
	node := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	root := t.TempDir()
	s.RuntimeRoot, s.RuntimeAppDirectory = root, "config"
	s.Host, s.GRPCHost = "127.0.0.1", "127.0.0.1"
	s.Port, s.GRPCPort = loopback.FreePort(t), loopback.FreePort(t)
	s.ReloadInterval, s.NearLimitRatio, s.MaxDescriptors = 20*time.Millisecond, 0.8, 1000
	srv, err := New(s, ratelua.Rueidis(rc), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return srv, filepath.Join(root, "config"), node
}

// pollHealth polls the server's /healthcheck until ok says yes of its
// status and body, for at most 30 s.
func pollHealth(t *testing.T, srv *Server, what string, ok func(code int, body string) bool) string {
	t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(srv.settings.Port) + "/healthcheck"
	deadline := time.Now().Add(30 * time.Second)
	var body string
	for {
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if body = string(b); ok(resp.StatusCode, body) {
				return body
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("within 30 s, /healthcheck did not show %s; last:\n%s", what, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// install puts a configuration file named name into the directory dir of a
// running server in one step, as an operator must (the reference's
// runtime swaps a symbolic link): the file is written beside dir and
// renamed into it, and dir, when it does not exist yet, is made beside
// its place with the file and renamed there. The reload loop polls every
// 20 ms, so with write (os.MkdirAll, then os.WriteFile: create, then
// fill) it could load the directory empty or the file half written, and
// a test would see that configuration, not the one it wrote.
func install(t *testing.T, dir, name, text string) {
	t.Helper()
	stage, err := os.MkdirTemp(filepath.Dir(dir), ".stage-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(stage)
	if err := os.WriteFile(filepath.Join(stage, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(stage, dir); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.Rename(filepath.Join(stage, name), filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// hasRule reports whether c holds the rule whose key is key
// ("domain.key_value"): the configuration a test installed is the one in
// use, not one the reload loop read before.
func hasRule(c *config.Config, key string) bool {
	if c == nil {
		return false
	}
	for _, r := range c.Rules {
		if r.Key == key {
			return true
		}
	}
	return false
}

// TestReloadKeepsTheLastGoodConfig: a broken file is logged and shown on
// the health endpoint; the previous rules stay in use; a fixed file loads.
func TestReloadKeepsTheLastGoodConfig(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "config")
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n")
	s := settings.Settings{RuntimeRoot: root, RuntimeAppDirectory: "config", NearLimitRatio: 0.8}
	srv, err := New(s, offline{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(true); err != nil {
		t.Fatal(err)
	}
	good := srv.Service().Config()
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: -1}\n")
	if err := srv.Reload(false); err == nil {
		t.Fatal("a broken file loaded")
	}
	if srv.Service().Config() != good {
		t.Fatal("the last good configuration was dropped")
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthcheck", nil))
	if body := rec.Body.String(); rec.Code != 200 || !strings.HasPrefix(body, "OK\n") || !strings.Contains(body, "a.yaml:4") {
		t.Fatalf("health %d %q: want OK and the failed load with its file and line", rec.Code, body)
	}
	write(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 2}\n")
	if err := srv.Reload(false); err != nil {
		t.Fatal(err)
	}
	if c := srv.Service().Config(); c == good || c.Rules[0].Limits[0].RequestsPerUnit != 2 {
		t.Fatal("the fixed file did not load")
	}
	if h := srv.Health(); h.LastError != "" {
		t.Fatalf("health still shows %q", h.LastError)
	}
}

// TestReloadKeepsTheLastGoodConfigOverAnAliasBomb (issue 30, H2): a
// billion-laughs file dropped into a running server's configuration
// directory is refused by the reload with its file and line (on
// /healthcheck and in the log), and the server keeps deciding with the
// last good configuration (before the bound, it grew to 23.7 GB).
func TestReloadKeepsTheLastGoodConfigOverAnAliasBomb(t *testing.T) {
	srv, dir, _ := runServer(t, settings.Settings{RequestTimeout: 2 * time.Second})
	install(t, dir, "good.yaml", "domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 1}\n")
	pollHealth(t, srv, "good.yaml loaded", func(code int, _ string) bool {
		return code == 200 && hasRule(srv.Service().Config(), "app.user")
	})
	good := srv.Service().Config()
	install(t, dir, "bomb.yaml", laughs(7))
	body := pollHealth(t, srv, "the bomb refused", func(_ int, body string) bool {
		return strings.Contains(body, "bomb.yaml")
	})
	if !strings.HasPrefix(body, "OK\n") || !strings.Contains(body, "bomb.yaml:7: excessive aliasing") {
		t.Fatalf("/healthcheck:\n%s\nwant OK and bomb.yaml:7 refused for excessive aliasing", body)
	}
	if srv.Service().Config() != good {
		t.Fatal("the last good configuration is not the one in use")
	}
	var codes []string
	for range 2 {
		resp, err := srv.Service().ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "app",
			Descriptors: []*rlpb.RateLimitDescriptor{{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "user", Value: "u"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, resp.OverallCode.String())
	}
	if got := strings.Join(codes, " "); got != "OK OVER_LIMIT" {
		t.Fatalf("two requests on the 1-an-hour rule: %s, want OK OVER_LIMIT", got)
	}
}

// TestJSONOutageIsUnavailable (issue 30, L4): with the server paused, a
// request to /json answered 400 after 5 to 11 s; it answers 503 when the
// request's deadline (RATELUA_REQUEST_TIMEOUT, as no caller sets one on
// /json) passes, and so does a gRPC call without a deadline, Unavailable.
func TestJSONOutageIsUnavailable(t *testing.T) {
	srv, dir, node := runServer(t, settings.Settings{RequestTimeout: 200 * time.Millisecond})
	install(t, dir, "good.yaml", "domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 10}\n")
	pollHealth(t, srv, "good.yaml loaded", func(code int, _ string) bool {
		return code == 200 && hasRule(srv.Service().Config(), "app.user")
	})
	post := func() (int, string) {
		t.Helper()
		// The client's timeout only keeps a hung answer from hanging the
		// test; what is asserted is the status.
		c := &http.Client{Timeout: time.Minute}
		resp, err := c.Post("http://127.0.0.1:"+strconv.Itoa(srv.settings.Port)+"/json", "application/json",
			strings.NewReader(`{"domain": "app", "descriptors": [{"entries": [{"key": "user", "value": "u"}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(); code != 200 {
		t.Fatalf("/json with the server up: %d %s", code, body)
	}
	if err := node.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Resume() })
	if code, body := post(); code != http.StatusServiceUnavailable || !strings.Contains(body, "rate limit backend") {
		t.Fatalf("/json with the server paused: %d %q, want 503 naming the backend", code, body)
	}
	_, err := srv.Service().ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "app",
		Descriptors: []*rlpb.RateLimitDescriptor{{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "user", Value: "u"}}}}})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a call without a deadline with the server paused: %v, want Unavailable", err)
	}
}

// TestTLSToAPlainServerNamesTLS (issue 30, L4): REDIS_TLS pointed at a
// server without TLS failed with only "context deadline exceeded"; the
// error says the server answers without TLS, naming REDIS_TLS.
func TestTLSToAPlainServerNamesTLS(t *testing.T) {
	node := testbench.StartSingle(t, testbench.Options{Kind: testbench.Valkey})
	c, err := NewClient(settings.Settings{RedisSocketType: "tcp", RedisType: "SINGLE", RedisURL: node.Addr, RedisTLS: true, RedisTLSSkipVerify: true})
	if err == nil {
		c.Close()
		t.Fatal("a TLS client connected to a server without TLS")
	}
	if !strings.Contains(err.Error(), "REDIS_TLS=true") || !strings.Contains(err.Error(), "answers without TLS") {
		t.Fatalf("error %q, want it to name REDIS_TLS and say the server answers without TLS", err)
	}
}

// TestPerSecondTLSIsItsOwn: the per-second deployment takes TLS from
// REDIS_PERSECOND_TLS, not REDIS_TLS (the reference's two flags, one set
// of files): with REDIS_TLS on and REDIS_PERSECOND_TLS off, the plain
// per-second server connects; with REDIS_PERSECOND_TLS on, the error names
// it.
func TestPerSecondTLSIsItsOwn(t *testing.T) {
	node := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	s := settings.Settings{RedisTLS: true, RedisTLSSkipVerify: true}
	target := settings.RedisTarget{Prefix: "REDIS_PERSECOND", SocketType: "tcp", Type: "SINGLE", URL: node.Addr}
	c, err := NewTargetClient(s, target)
	if err != nil {
		t.Fatalf("REDIS_PERSECOND_TLS off, REDIS_TLS on: %v", err)
	}
	c.Close()
	target.TLS = true
	c, err = NewTargetClient(settings.Settings{RedisTLSSkipVerify: true}, target)
	if err == nil {
		c.Close()
		t.Fatal("a TLS client connected to a server without TLS")
	}
	if !strings.Contains(err.Error(), "REDIS_PERSECOND_TLS=true") || !strings.Contains(err.Error(), "answers without TLS") {
		t.Fatalf("error %q, want it to name REDIS_PERSECOND_TLS and say the server answers without TLS", err)
	}
}
