package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// failSafeLimiters are a token bucket of every call path (EVALSHA, FCALL),
// failing closed and open, on client.
func failSafeLimiters(t *testing.T, client rueidis.Client, prefix string) map[string]*ratelua.Limiter {
	t.Helper()
	out := map[string]*ratelua.Limiter{}
	for _, functions := range []bool{false, true} {
		for _, open := range []bool{false, true} {
			l, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: prefix, Functions: functions, FailOpen: open}, ratelua.PerSecond(1000, 1000))
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("functions=%v/failopen=%v", functions, open)] = l
		}
	}
	return out
}

// wantRefused: every limiter answers the server's "no" as ErrScript and
// denies, FailOpen or not.
func wantRefused(t *testing.T, limiters map[string]*ratelua.Limiter, what string) {
	t.Helper()
	for name, l := range limiters {
		r, err := l.Allow(context.Background(), "victim")
		if r.Allowed || !errors.Is(err, ratelua.ErrScript) || errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("%s, %s: %+v, %v; want denied with ErrScript", what, name, r, err)
		}
	}
}

// TestServerRefusalsNeverFailOpen: any answer of a server (NOPERM on
// FCALL or on FUNCTION LOAD, NOPERM on EVALSHA, OOM, BUSY) is an error
// reply that a FailOpen limiter denies; only a call without an answer (a
// deadline during DEBUG SLEEP, a killed server) is ErrUnavailable, which it
// admits.
func TestServerRefusalsNeverFailOpen(t *testing.T) {
	eachServer(t, func(t *testing.T, _ rueidis.Client, shared *testbench.Node) {
		s := testbench.StartSingle(t, testbench.Options{Kind: shared.Kind, Config: []string{"enable-debug-command yes"}})
		ctx := context.Background()
		do := func(args ...string) {
			t.Helper()
			if _, err := s.Do(ctx, args...); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
		}
		connect := func(user string, opt rueidis.ClientOption) rueidis.Client {
			t.Helper()
			opt.InitAddress, opt.DisableCache, opt.DisableRetry = []string{s.Addr}, true, true
			if user != "" {
				opt.Username, opt.Password = user, "pw"
			}
			c, err := rueidis.NewClient(opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return c
		}

		// The report's repro: a user who may not load functions, no
		// library on the server.
		do("ACL", "SETUSER", "lim", "on", ">pw", "~*", "+@all", "-function")
		do("FUNCTION", "FLUSH")
		lim := failSafeLimiters(t, connect("lim", rueidis.ClientOption{}), "acl")
		for name, l := range lim {
			r, err := l.Allow(ctx, "victim")
			if strings.Contains(name, "functions=true") && (r.Allowed || !errors.Is(err, ratelua.ErrScript) || errors.Is(err, ratelua.ErrUnavailable)) {
				t.Errorf("NOPERM function|load, %s: %+v, %v; want denied with ErrScript", name, r, err)
			}
			if !strings.Contains(name, "functions=true") && (err != nil || !r.Allowed) {
				t.Errorf("EVALSHA by a user who may run scripts, %s: %+v, %v", name, r, err)
			}
		}
		// A user who may not run scripts at all.
		do("ACL", "SETUSER", "noscript", "on", ">pw", "~*", "+@all", "-@scripting")
		wantRefused(t, failSafeLimiters(t, connect("noscript", rueidis.ClientOption{}), "acl"), "NOPERM scripting")

		root := failSafeLimiters(t, connect("", rueidis.ClientOption{}), "oom")
		// Load the library first, so that OOM is what the call meets.
		if _, err := ratelua.LoadFunctions(ctx, ratelua.Rueidis(connect("", rueidis.ClientOption{})), newestLibrary(t)); err != nil {
			t.Fatal(err)
		}
		do("CONFIG", "SET", "maxmemory-policy", "noeviction")
		do("CONFIG", "SET", "maxmemory", "1")
		wantRefused(t, root, "OOM")
		do("CONFIG", "SET", "maxmemory", "0")

		// BUSY: a script that runs past busy-reply-threshold holds the
		// server; every other call is answered BUSY until it is killed.
		do("CONFIG", "SET", "busy-reply-threshold", "10")
		busy := make(chan error, 1)
		go func() {
			_, err := s.Do(ctx, "EVAL", "local t = redis.call('TIME') while true do end", "0")
			busy <- err
		}()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := s.Do(ctx, "PING"); err != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		wantRefused(t, root, "BUSY")
		do("SCRIPT", "KILL")
		<-busy

		// No answer within the deadline: the server sleeps.
		sleeper := failSafeLimiters(t, connect("", rueidis.ClientOption{}), "sleep")
		for _, l := range sleeper {
			if _, err := l.Allow(ctx, "warm"); err != nil {
				t.Fatal(err)
			}
		}
		go s.Do(ctx, "DEBUG", "SLEEP", "1")
		time.Sleep(100 * time.Millisecond)
		for name, l := range sleeper {
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			r, err := l.Allow(short, "victim")
			cancel()
			if r.Allowed != strings.Contains(name, "failopen=true") || !errors.Is(err, ratelua.ErrUnavailable) || errors.Is(err, ratelua.ErrScript) {
				t.Errorf("deadline during DEBUG SLEEP, %s: %+v, %v; want ErrUnavailable, allowed only by FailOpen", name, r, err)
			}
		}
		time.Sleep(time.Second)

		// A killed server answers nothing.
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
		for name, l := range sleeper {
			short, cancel := context.WithTimeout(ctx, time.Second)
			r, err := l.Allow(short, "victim")
			cancel()
			if r.Allowed != strings.Contains(name, "failopen=true") || !errors.Is(err, ratelua.ErrUnavailable) {
				t.Errorf("killed server, %s: %+v, %v; want ErrUnavailable, allowed only by FailOpen", name, r, err)
			}
		}
		// A cancelled context is never sent, and is the caller's doing,
		// not an outage: even FailOpen denies it (issue 20, row 2).
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		for name, l := range sleeper {
			if r, err := l.Allow(cancelled, "victim"); r.Allowed || !errors.Is(err, context.Canceled) || errors.Is(err, ratelua.ErrUnavailable) {
				t.Errorf("cancelled context, %s: %+v, %v", name, r, err)
			}
		}
	})
}

// TestClusterRefusalsNeverFailOpen: the ACL repro on a six-node cluster,
// through the cluster client, on both call paths.
func TestClusterRefusalsNeverFailOpen(t *testing.T) {
	onCluster(t, func(t *testing.T, client rueidis.Client, c *testbench.Cluster) {
		ctx := context.Background()
		nodes := append(c.Masters(), c.Replicas()...)
		for _, n := range nodes {
			if _, err := n.Do(ctx, "ACL", "SETUSER", "lim", "on", ">pw", "~*", "+@all", "-function"); err != nil {
				t.Fatal(err)
			}
			if _, err := n.Do(ctx, "ACL", "SETUSER", "noscript", "on", ">pw", "~*", "+@all", "-@scripting"); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			for _, n := range nodes {
				n.Do(ctx, "ACL", "DELUSER", "lim", "noscript")
			}
			ratelua.
				// Leave the library for the other cluster tests.
				LoadFunctions(ctx, ratelua.Rueidis(client), newestLibrary(t))
		})
		for _, m := range c.Masters() {
			if _, err := m.Do(ctx, "FUNCTION", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		as := func(user string) rueidis.Client {
			u, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true, Username: user, Password: "pw"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(u.Close)
			return u
		}
		for name, l := range failSafeLimiters(t, as("lim"), "acl") {
			if !strings.Contains(name, "functions=true") {
				continue
			}
			if r, err := l.Allow(ctx, "victim"); r.Allowed || !errors.Is(err, ratelua.ErrScript) {
				t.Errorf("NOPERM function|load on the cluster, %s: %+v, %v", name, r, err)
			}
		}
		wantRefused(t, failSafeLimiters(t, as("noscript"), "acl"), "NOPERM scripting on the cluster")
	})
}
