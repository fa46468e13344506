package statsink

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// udpListener collects the lines of the datagrams sent to it.
func udpListener(t *testing.T) (*net.UDPConn, <-chan string) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	lines := make(chan string, 1000)
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if n > udpPacket {
				lines <- "datagram of " + strconv.Itoa(n) + " bytes"
			}
			for _, l := range strings.Split(strings.TrimSuffix(string(buf[:n]), "\n"), "\n") {
				lines <- l
			}
		}
	}()
	return c, lines
}

// collect reads n lines, sorted.
func collect(t *testing.T, lines <-chan string, n int) []string {
	t.Helper()
	var out []string
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case l := <-lines:
			out = append(out, l)
		case <-timeout:
			t.Fatalf("%d lines of %d arrived: %q", len(out), n, out)
		}
	}
	sort.Strings(out)
	return out
}

func TestStatsdOverUDPSendsIncreasesOnly(t *testing.T) {
	c, lines := udpListener(t)
	sink, err := NewStatsdSink("udp", c.LocalAddr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(sink, map[string]string{"zone": "eu.west:1", "app": "rl"})
	hits := s.Counter("ratelimit.service.rate_limit.app.user.total_hits")
	hits.Add(3)
	s.Counter("ratelimit.service.config_load_success").Inc()
	s.Counter("never.counted")
	s.Gauge("ratelimit.go.numGoroutine").Set(9)
	s.Timer("ratelimit_server.ShouldRateLimit.response_time").Add(7 * time.Millisecond)
	s.Flush()
	want := []string{
		"ratelimit.go.numGoroutine.__app=rl.__zone=eu_west_1:9|g",
		"ratelimit.service.config_load_success.__app=rl.__zone=eu_west_1:1|c",
		"ratelimit.service.rate_limit.app.user.total_hits.__app=rl.__zone=eu_west_1:3|c",
		"ratelimit_server.ShouldRateLimit.response_time.__app=rl.__zone=eu_west_1:7|ms",
	}
	if got := collect(t, lines, 4); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("first flush:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	hits.Add(2)
	s.Flush()
	want = []string{
		"ratelimit.go.numGoroutine.__app=rl.__zone=eu_west_1:9|g",
		"ratelimit.service.rate_limit.app.user.total_hits.__app=rl.__zone=eu_west_1:2|c",
	}
	if got := collect(t, lines, 2); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("second flush: %q, want the increase 2 of total_hits and the gauge", got)
	}
}

func TestUDPDatagramsHoldWholeLines(t *testing.T) {
	c, lines := udpListener(t)
	sink, err := NewStatsdSink("udp", c.LocalAddr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(sink, nil)
	const n = 300
	for i := range n {
		s.Counter("ratelimit.service.rate_limit.domain.key_" + strconv.Itoa(i) + ".total_hits").Add(uint64(i + 1))
	}
	s.Flush()
	got := collect(t, lines, n)
	sum := 0
	for _, l := range got {
		name, rest, ok := strings.Cut(l, ":")
		v, err := strconv.Atoi(strings.TrimSuffix(rest, "|c"))
		if !ok || err != nil || !strings.HasPrefix(name, "ratelimit.service.rate_limit.domain.key_") {
			t.Fatalf("a line cut or merged: %q", l)
		}
		sum += v
	}
	if sum != n*(n+1)/2 {
		t.Fatalf("sum of the counters %d, want %d", sum, n*(n+1)/2)
	}
}

func TestStatsdOverTCPReconnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sink, err := NewStatsdSink("tcp", ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(sink, nil)
	c := s.Counter("ratelimit.service.call.should_rate_limit.redis_error")
	read := func() string {
		conn, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		l, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	c.Inc()
	go s.Flush()
	if l := read(); l != "ratelimit.service.call.should_rate_limit.redis_error:1|c\n" {
		t.Fatalf("first line %q", l)
	}
	// The server closed the connection: the next flushes find it out and
	// connect again; what the broken connection took is lost, as with
	// the reference.
	c.Add(5)
	go func() {
		for range 20 {
			s.Flush()
			c.Add(5)
		}
	}()
	if l := read(); !strings.HasPrefix(l, "ratelimit.service.call.should_rate_limit.redis_error:5|c") {
		t.Fatalf("after a reconnection %q", l)
	}
}

func TestDogStatsdTagsAndMogrifiers(t *testing.T) {
	c, lines := udpListener(t)
	env := map[string]string{
		"DOG_STATSD_MOGRIFIER_HITS_PATTERN": `^ratelimit\.service\.rate_limit\.(.*)\.([^.]*)\.total_hits$`,
		"DOG_STATSD_MOGRIFIER_HITS_NAME":    "ratelimit.service.rate_limit.total_hits",
		"DOG_STATSD_MOGRIFIER_HITS_TAGS":    "domain:$1,key:$2",
	}
	mog, err := MogrifiersFromEnv([]string{"HITS"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewDogStatsdSink(c.LocalAddr().String(), []string{"env:prod"}, mog, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(sink, map[string]string{"pod": "a"})
	s.Counter("ratelimit.service.rate_limit.app.user.total_hits").Add(4)
	s.Counter("ratelimit.service.global_shadow_mode").Inc()
	s.Flush()
	want := []string{
		"ratelimit.service.global_shadow_mode:1|c|#env:prod,pod:a",
		"ratelimit.service.rate_limit.total_hits:4|c|#env:prod,pod:a,domain:app,key:user",
	}
	if got := collect(t, lines, 2); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	delete(env, "DOG_STATSD_MOGRIFIER_HITS_NAME")
	if _, err := MogrifiersFromEnv([]string{"HITS"}, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "DOG_STATSD_MOGRIFIER_HITS_NAME") {
		t.Fatalf("a mogrifier without a name: %v, want an error naming DOG_STATSD_MOGRIFIER_HITS_NAME", err)
	}
}

// scrape returns the samples of a Prometheus endpoint by "name{labels}".
func scrape(t *testing.T, url string) map[string]string {
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
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		out[l[:i]] = l[i+1:]
	}
	return out
}

func TestPrometheusNamesAndLabelsAreTheReferences(t *testing.T) {
	e, err := Start(Config{Prometheus: true, PrometheusAddr: "127.0.0.1:0", PrometheusPath: "/metrics", FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	s := e.Store
	s.Counter("ratelimit.service.rate_limit.app.user_u1.total_hits").Add(5)
	s.Counter("ratelimit.service.rate_limit.app.a.b.c.over_limit").Add(2)
	s.Counter("ratelimit.service.rate_limit.app.a.b.d.over_limit").Add(3)
	// Unanchored, the reference's regular expression counts a deep rule's
	// over_limit_with_local_cache as over_limit.
	s.Counter("ratelimit.service.rate_limit.app.a.b.over_limit_with_local_cache").Add(1)
	s.Counter("ratelimit.service.rate_limit.app.x.over_limit_with_local_cache").Add(4)
	s.Counter("ratelimit.service.rate_limit.nope.domain_not_found").Add(6)
	s.Counter("ratelimit.service.call.should_rate_limit.service_error").Add(7)
	s.Counter("ratelimit.service.config_load_success").Inc()
	s.Timer("ratelimit_server.ShouldRateLimit.response_time").Add(3 * time.Millisecond)
	url := "http://" + e.PrometheusAddr().String() + "/metrics"
	// A timer's value is observed at once (the reference's sinks get
	// timers as they come); the counters wait for the flush.
	for k := range scrape(t, url) {
		if !strings.HasPrefix(k, "ratelimit_service_response_time_seconds") {
			t.Fatalf("before a flush: %s, want the timer only", k)
		}
	}
	s.Flush()
	got := scrape(t, url)
	want := map[string]string{
		`ratelimit_service_rate_limit_total_hits{domain="app",key1="user_u1"}`:                    "5",
		`ratelimit_service_rate_limit_over_limit{domain="app",key1="a",key2="b"}`:                 "6",
		`ratelimit_service_rate_limit_app_x_over_limit_with_local_cache`:                          "4",
		`ratelimit_service_rate_limit_nope_domain_not_found`:                                      "6",
		`ratelimit_service_should_rate_limit_error{err_type="service_error"}`:                     "7",
		`ratelimit_service_config_load_success`:                                                   "1",
		`ratelimit_service_response_time_seconds_bucket{grpc_method="ShouldRateLimit",le="2.5"}`:  "0",
		`ratelimit_service_response_time_seconds_bucket{grpc_method="ShouldRateLimit",le="5"}`:    "1",
		`ratelimit_service_response_time_seconds_bucket{grpc_method="ShouldRateLimit",le="+Inf"}`: "1",
		`ratelimit_service_response_time_seconds_sum{grpc_method="ShouldRateLimit"}`:              "3",
		`ratelimit_service_response_time_seconds_count{grpc_method="ShouldRateLimit"}`:            "1",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %s", k, got[k], v)
		}
	}
	if t.Failed() {
		t.Logf("scraped: %v", got)
	}
}

func TestMapperFileRefusesWhatItDoesNotApply(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"mappings:\n  - match: a.*\n    name: x\n    ttl: 1m\n", "ttl"},
		{"mappings:\n  - match: a.*\n    name: x\n    summary_options: {}\n", "summary_options"},
		{"mappings:\n  - match: 'a.*['\n    match_type: regex\n    name: x\n", "mapping 1"},
		{"mappings:\n  - match: a.b*c\n    name: x\n", "not a glob"},
		{"mappings:\n  - match: a.*\n    name: 9x\n", "not a Prometheus name"},
		{"mappings:\n  - match: a.*\n", "no name"},
	} {
		if _, err := ParseMapper([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming %s", tc.yaml, err, tc.want)
		}
	}
	m, err := ParseMapper([]byte("mappings:\n  - match: ratelimit.service.rate_limit.*.*.total_hits\n    name: hits\n    labels: {rule: \"$1.$2\"}\n  - match: ratelimit.service.rate_limit.*\n    name: x\n    action: drop\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.lookup("ratelimit.service.rate_limit.app.user.total_hits", "counter"); got.name != "hits" || got.labels["rule"] != "app.user" {
		t.Fatalf("mapped %+v", got)
	}
}

func TestSeveralSinksAreRefused(t *testing.T) {
	if _, err := Start(Config{Statsd: true, Prometheus: true, FlushInterval: time.Second}); err != ErrSeveralSinks {
		t.Fatalf("statsd and Prometheus: %v, want ErrSeveralSinks", err)
	}
	e, err := Start(Config{Disable: true, Statsd: true, Prometheus: true})
	if err != nil || e.Store != nil {
		t.Fatalf("DISABLE_STATS: %v, %v, want no store", e, err)
	}
	e.Store.Counter("x").Inc() // a nil store counts nothing, without failing
}

// TestUnreachableStatsdIsLoggedOnce: with nothing listening, a flush's
// lines are dropped and the warning names the server and the bytes lost,
// once a minute, not at every flush; the sink keeps counting.
func TestUnreachableStatsdIsLoggedOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var logs strings.Builder
	sink, err := NewStatsdSink("tcp", addr, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(sink, nil)
	c := s.Counter("ratelimit.service.config_load_success")
	for range 3 {
		c.Inc()
		s.Flush()
	}
	if n := strings.Count(logs.String(), `msg="statistics not sent"`); n != 1 || !strings.Contains(logs.String(), "server=tcp://"+addr) ||
		!strings.Contains(logs.String(), "bytes_dropped=") {
		t.Fatalf("3 flushes to nothing logged %d warnings, want 1 naming the server:\n%s", n, logs.String())
	}
	if c.Value() != 3 {
		t.Fatalf("counter %d, want 3", c.Value())
	}
}

// TestReferenceMappingParses: the embedded mapping (the reference's
// names) parses, and an unmapped sink keeps statsd names.
func TestReferenceMappingParses(t *testing.T) {
	if _, err := ReferenceMapper(); err != nil {
		t.Fatal(err)
	}
	if got := NewPrometheusSink(nil).mapper.lookup("ratelimit.service.rate_limit.app.user.total_hits", "counter"); got.name != "ratelimit_service_rate_limit_app_user_total_hits" || len(got.labels) != 0 {
		t.Fatalf("unmapped: %+v", got)
	}
}
