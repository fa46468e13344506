package server

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ratelua/ratelua/rls/settings"
	"github.com/ratelua/ratelua/rls/statsink"
	"github.com/ratelua/ratelua/rls/xds"
)

// statsdLines collects the lines of the statsd datagrams sent to it.
type statsdLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *statsdLines) sum(prefix string) (n uint64, seen bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		name, rest, _ := strings.Cut(line, ":")
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		seen = true
		v, _ := strconv.ParseUint(strings.Split(rest, "|")[0], 10, 64)
		n += v
	}
	return n, seen
}

// TestServerExportsStatsd: a running server (USE_STATSD over UDP, flushed
// every 20 ms) sends the configuration loads and errors, the gRPC calls
// and their times, the Go runtime's statistics, every name with
// EXTRA_TAGS.
func TestServerExportsStatsd(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got statsdLines
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			got.mu.Lock()
			got.lines = append(got.lines, strings.Split(strings.TrimSuffix(string(buf[:n]), "\n"), "\n")...)
			got.mu.Unlock()
		}
	}()
	srv, dir, _ := runServer(t, settings.Settings{Stats: statsink.Config{Statsd: true, StatsdHost: "127.0.0.1", StatsdPort: c.LocalAddr().(*net.UDPAddr).Port,
		StatsdProtocol: "udp", FlushInterval: 20 * time.Millisecond, ExtraTags: map[string]string{"pod": "p.1"}}})
	install(t, dir, "app.yaml", "domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 2}\n")
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				got.mu.Lock()
				t.Fatalf("within 30 s, not %s; received:\n%s", what, strings.Join(got.lines, "\n"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("config_load_success", func() bool {
		n, _ := got.sum("ratelimit.service.config_load_success.__pod=p_1")
		return n >= 1 && hasRule(srv.Service().Config(), "app.user")
	})
	// The directory may have been missing at the first load (an error,
	// counted once): a file that does not load is one more.
	before, _ := got.sum("ratelimit.service.config_load_error.__pod=p_1")
	install(t, dir, "bad.yaml", "domain: bad\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n")
	wait("config_load_error", func() bool {
		n, _ := got.sum("ratelimit.service.config_load_error.__pod=p_1")
		return n == before+1 && before <= 1
	})
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(srv.settings.GRPCPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	for range 3 {
		if _, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "app", Descriptors: []*rlpb.RateLimitDescriptor{{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "user", Value: "u1"}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	wait("3 requests and 3 response times", func() bool {
		n, _ := got.sum("ratelimit_server.ShouldRateLimit.total_requests.__pod=p_1")
		got.mu.Lock()
		times := 0
		for _, l := range got.lines {
			if strings.HasPrefix(l, "ratelimit_server.ShouldRateLimit.response_time.__pod=p_1:") && strings.HasSuffix(l, "|ms") {
				times++
			}
		}
		got.mu.Unlock()
		return n == 3 && times == 3
	})
	wait("the rule's and the runtime's statistics", func() bool {
		hits, _ := got.sum("ratelimit.service.rate_limit.app.user.total_hits.__pod=p_1")
		over, _ := got.sum("ratelimit.service.rate_limit.app.user.over_limit.__pod=p_1")
		_, goroutines := got.sum("ratelimit.go.numGoroutine.__pod=p_1")
		return hits == 3 && over == 1 && goroutines
	})
}

// TestUnreadableDirectoryCountsOneLoadError: a configuration directory
// that cannot be read fails every poll; config_load_error counts the
// failure once, as the reference counts a load that failed, and a file
// that does not parse, once per change.
func TestUnreadableDirectoryCountsOneLoadError(t *testing.T) {
	store := statsink.NewStore(statsink.NewPrometheusSink(nil), nil)
	srv, err := New(settings.Settings{RuntimeRoot: filepath.Join(t.TempDir(), "missing"), RuntimeAppDirectory: "config", NearLimitRatio: 0.8},
		offline{}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.stats.Export(store)
	errs := store.Counter("ratelimit.service.config_load_error")
	for range 3 {
		if err := srv.Reload(false); err == nil {
			t.Fatal("a missing directory loaded")
		}
	}
	if n := errs.Value(); n != 1 {
		t.Fatalf("config_load_error %d after 3 polls of a missing directory, want 1", n)
	}
	dir := srv.settings.ConfigDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("domain: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_ = srv.Reload(false)
	}
	if n := errs.Value(); n != 2 {
		t.Fatalf("config_load_error %d after a file that does not parse, polled 3 times, want 2", n)
	}
}

// TestXDSUpdatesCountLoads: each xDS update counts as the reference
// counts it, config_load_success when applied, config_load_error when
// refused.
func TestXDSUpdatesCountLoads(t *testing.T) {
	store := statsink.NewStore(statsink.NewPrometheusSink(nil), nil)
	srv, err := New(settings.Settings{NearLimitRatio: 0.8}, offline{}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.stats.Export(store)
	good := xds.Update{Version: "1", Files: []xds.File{{Name: "app", Data: []byte("domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")}}}
	bad := xds.Update{Version: "2", Files: []xds.File{{Name: "app", Data: []byte("domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: fortnight, requests_per_unit: 5}\n")}}}
	if err := srv.ApplyXDS(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	if err := srv.ApplyXDS(context.Background(), bad); err == nil {
		t.Fatal("a bad update applied")
	}
	ok, failed := store.Counter("ratelimit.service.config_load_success").Value(), store.Counter("ratelimit.service.config_load_error").Value()
	if ok != 1 || failed != 1 {
		t.Fatalf("config_load_success %d, config_load_error %d; want 1 and 1", ok, failed)
	}
}
