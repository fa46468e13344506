package xds_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	confv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"

	"github.com/ratelua/ratelua/rls/xds"
	"github.com/ratelua/ratelua/rls/xds/xdstest"
)

// config is a RateLimitConfig of domain with one rule: key limited to
// n per unit.
func config(name, domain, key string, n uint32, unit confv3.RateLimitUnit) *confv3.RateLimitConfig {
	return &confv3.RateLimitConfig{Name: name, Domain: domain, Descriptors: []*confv3.RateLimitDescriptor{
		{Key: key, RateLimit: &confv3.RateLimitPolicy{Unit: unit, RequestsPerUnit: n}},
	}}
}

// recorder applies updates by recording them, refusing those refuse
// names (by version).
type recorder struct {
	updates chan xds.Update
	refuse  map[string]bool
	// exited receives what Run returned, if it returns before the test
	// ends.
	exited chan error
}

func newRecorder(refuse ...string) *recorder {
	r := &recorder{updates: make(chan xds.Update, 16), refuse: map[string]bool{}, exited: make(chan error, 1)}
	for _, v := range refuse {
		r.refuse[v] = true
	}
	return r
}

func (r *recorder) apply(_ context.Context, u xds.Update) error {
	r.updates <- u
	if r.refuse[u.Version] {
		return fmt.Errorf("version %s refused by the test", u.Version)
	}
	return nil
}

func (r *recorder) next(t *testing.T) xds.Update {
	t.Helper()
	select {
	case u := <-r.updates:
		return u
	case err := <-r.exited:
		t.Fatalf("Run returned %v while the test waited for an update", err)
		return xds.Update{}
	case <-time.After(xdstest.Wait):
		t.Fatalf("no update within %v", xdstest.Wait)
		return xds.Update{}
	}
}

// run runs xds.Run with rec.apply until the test ends, and fails the test
// if it returns anything but the context's end.
func run(t *testing.T, opts xds.Options, rec *recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := xds.Run(ctx, opts, rec.apply)
		if ctx.Err() == nil {
			rec.exited <- err
		}
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
}

func wantYAML(t *testing.T, c *confv3.RateLimitConfig) string {
	t.Helper()
	b, err := xds.YAML(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUpdatesAreAppliedAndAnswered: each complete state the server sets
// reaches the callback, every resource as its YAML document; an update
// the callback accepts is ACKed with its version, one it refuses is
// NACKed with the error and the last good version, and the next good one
// is ACKed again.
func TestUpdatesAreAppliedAndAnswered(t *testing.T) {
	srv := xdstest.Start(t)
	a := config("a", "alpha", "user", 10, confv3.RateLimitUnit_SECOND)
	b := config("b", "beta", "ip", 5, confv3.RateLimitUnit_MINUTE)
	srv.Set(t, "node-1", "v1", a, b)
	rec := newRecorder("v2")
	run(t, xds.Options{ServerURL: srv.Addr, NodeID: "node-1", Backoff: xds.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}}, rec)

	u := rec.next(t)
	if u.Version != "v1" || len(u.Files) != 2 {
		t.Fatalf("first update: version %q, %d files; want v1, 2", u.Version, len(u.Files))
	}
	got := map[string]string{}
	for _, f := range u.Files {
		got[f.Name] = string(f.Data)
	}
	if got["a"] != wantYAML(t, a) || got["b"] != wantYAML(t, b) {
		t.Fatalf("files %q; want a and b as YAML", got)
	}
	srv.WaitACK(t, "v1")

	srv.Set(t, "node-1", "v2", config("a", "alpha", "user", 20, confv3.RateLimitUnit_SECOND))
	if u := rec.next(t); u.Version != "v2" {
		t.Fatalf("second update: version %q, want v2", u.Version)
	}
	nack := srv.WaitAnswer(t, "v2", nil)
	if !nack.NACK("v2") {
		t.Fatalf("v2, refused by the callback, answered %v: want a NACK", nack)
	}
	if !strings.Contains(nack.GetErrorDetail().GetMessage(), "version v2 refused by the test") {
		t.Errorf("NACK detail %q does not carry the callback's error", nack.GetErrorDetail().GetMessage())
	}
	if nack.GetVersionInfo() != "v1" {
		t.Errorf("NACK of v2 carries version %q, want the last good one, v1", nack.GetVersionInfo())
	}

	srv.Set(t, "node-1", "v3", b)
	if u := rec.next(t); u.Version != "v3" || len(u.Files) != 1 || u.Files[0].Name != "b" {
		t.Fatalf("third update: %+v, want v3 with b", u)
	}
	srv.WaitACK(t, "v3")
	for _, r := range srv.Requests() {
		if r.ACK("v2") {
			t.Errorf("v2 was ACKed: %v", r)
		}
	}
}

// TestNodeAndHeaders: the node's id and metadata and the additional
// headers reach the server, and a node the server holds nothing for gets
// nothing.
func TestNodeAndHeaders(t *testing.T) {
	srv := xdstest.Start(t)
	srv.Set(t, "other", "o1", config("o", "other", "k", 1, confv3.RateLimitUnit_SECOND))
	srv.Set(t, "gateway", "g1", config("g", "gw", "k", 1, confv3.RateLimitUnit_SECOND))
	rec := newRecorder()
	run(t, xds.Options{
		ServerURL: srv.Addr, NodeID: "gateway",
		NodeMetadata: map[string]string{"cluster": "edge"},
		Headers:      map[string]string{"x-tenant": "t1"},
	}, rec)
	if u := rec.next(t); u.Version != "g1" || len(u.Files) != 1 || !strings.Contains(string(u.Files[0].Data), "domain: gw") {
		t.Fatalf("update %+v, want g1 with domain gw", u)
	}
	srv.WaitACK(t, "g1")
	nodes := srv.Nodes()
	if len(nodes) == 0 || nodes[0].GetId() != "gateway" || nodes[0].GetMetadata().GetFields()["cluster"].GetStringValue() != "edge" {
		t.Errorf("nodes %v: want id gateway with cluster=edge", nodes)
	}
	h := srv.Headers()
	if len(h) == 0 || strings.Join(h[0].Get("x-tenant"), ",") != "t1" {
		t.Errorf("stream headers %v: want x-tenant: t1", h)
	}
}

// TestReconnects: when the server goes away, the client opens a new
// stream once it is back, says which version it holds, and takes the
// state the server has by then.
func TestReconnects(t *testing.T) {
	srv := xdstest.Start(t)
	srv.Set(t, "n", "v1", config("a", "alpha", "user", 1, confv3.RateLimitUnit_SECOND))
	rec := newRecorder()
	run(t, xds.Options{ServerURL: srv.Addr, NodeID: "n", ConnectRetryInterval: 10 * time.Millisecond,
		Backoff: xds.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond, RandomFactor: 0.5, Jitter: true}}, rec)
	if u := rec.next(t); u.Version != "v1" {
		t.Fatalf("update %q, want v1", u.Version)
	}
	_, after := srv.WaitFor(t, 0, "ACK of v1", func(r xdstest.Request) bool { return r.ACK("v1") })
	srv.Stop()
	srv.Set(t, "n", "v2", config("a", "alpha", "user", 2, confv3.RateLimitUnit_SECOND))
	srv.Restart(t)
	if u := rec.next(t); u.Version != "v2" {
		t.Fatalf("update after the restart %q, want v2", u.Version)
	}
	first, _ := srv.WaitFor(t, after, "a new stream's first request", func(r xdstest.Request) bool { return r.GetResponseNonce() == "" })
	if first.GetVersionInfo() != "v1" {
		t.Errorf("the new stream starts at version %q, want v1 (the last accepted)", first.GetVersionInfo())
	}
	srv.WaitACK(t, "v2")
}

// TestOptionsRefused: options that cannot work are an error naming what
// is wrong, returned at once.
func TestOptionsRefused(t *testing.T) {
	ok := func(context.Context, xds.Update) error { return nil }
	for name, c := range map[string]struct {
		opts  xds.Options
		apply xds.Apply
		want  string
	}{
		"no url":       {xds.Options{}, ok, "no server URL"},
		"no apply":     {xds.Options{ServerURL: "localhost:1"}, nil, "no function"},
		"max below":    {xds.Options{ServerURL: "localhost:1", Backoff: xds.Backoff{Initial: time.Minute, Max: time.Second}}, ok, "below the initial"},
		"factor":       {xds.Options{ServerURL: "localhost:1", Backoff: xds.Backoff{RandomFactor: 1.5}}, ok, "random factor"},
		"message size": {xds.Options{ServerURL: "localhost:1", MaxMsgSize: -1}, ok, "max message size"},
	} {
		err := xds.Run(context.Background(), c.opts, c.apply)
		if !errors.Is(err, xds.ErrOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrOptions naming %q", name, err, c.want)
		}
	}
}

// TestRunWaitsForAServer: with no server listening, Run keeps trying
// until its context ends, then returns the context's error.
func TestRunWaitsForAServer(t *testing.T) {
	srv := xdstest.Start(t)
	addr := srv.Addr
	srv.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	applied := make(chan struct{}, 1)
	go func() {
		done <- xds.Run(ctx, xds.Options{ServerURL: addr, ConnectRetryInterval: time.Millisecond},
			func(context.Context, xds.Update) error { applied <- struct{}{}; return nil })
	}()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v before its context ended", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if len(applied) != 0 {
		t.Fatal("an update was applied with no server")
	}
}

// TestUpdateInNameOrder: the resources of an update come in the order of
// their names, whatever order the server sends them in (go-control-plane's
// cache sends its map's), so that a state loads, or fails, the same way
// every time.
func TestUpdateInNameOrder(t *testing.T) {
	srv := xdstest.Start(t)
	names := []string{"f", "c", "a", "e", "b", "d", "h", "g"}
	var configs []*confv3.RateLimitConfig
	for _, n := range names {
		configs = append(configs, config(n, "domain-"+n, "k", 1, confv3.RateLimitUnit_SECOND))
	}
	srv.Set(t, "n", "v1", configs...)
	rec := newRecorder()
	run(t, xds.Options{ServerURL: srv.Addr, NodeID: "n"}, rec)
	u := rec.next(t)
	var got []string
	for _, f := range u.Files {
		got = append(got, f.Name)
	}
	if strings.Join(got, "") != "abcdefgh" {
		t.Errorf("files in the order %v, want a to h", got)
	}
}
