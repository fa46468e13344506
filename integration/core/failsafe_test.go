package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := s.Do(ctx, "PING")
			if err != nil && strings.HasPrefix(err.Error(), "BUSY") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server never answered BUSY in 30 s (last PING: %v)", err)
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
		outcomes := whileAsleep(t, s, func(l *ratelua.Limiter) (ratelua.Result, error) {
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			return l.Allow(short, "victim")
		}, sleeper)
		for name, o := range outcomes {
			if o.r.Allowed != strings.Contains(name, "failopen=true") || !errors.Is(o.err, ratelua.ErrUnavailable) || errors.Is(o.err, ratelua.ErrScript) {
				t.Errorf("deadline during DEBUG SLEEP, %s: %+v, %v; want ErrUnavailable, allowed only by FailOpen", name, o.r, o.err)
			}
		}

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

// outcome is a limiter's answer to one call.
type outcome struct {
	r   ratelua.Result
	err error
}

// debugSleep is how long whileAsleep holds the server.
const debugSleep = 3 * time.Second

// whileAsleep makes call on every limiter at once while s is held by
// DEBUG SLEEP, and returns their answers. It waits for the server to stop
// answering before the calls, and for the sleep's end after them; the
// answers count only when the sleep provably covered every call: it began
// before the calls (it ended at the latest when its reply came, and lasted
// debugSleep) and ended after them (it began at the earliest when it was
// sent). Otherwise (a loaded machine started it late) it tries again, up
// to five times.
func whileAsleep(t *testing.T, s *testbench.Node, call func(*ratelua.Limiter) (ratelua.Result, error), limiters map[string]*ratelua.Limiter) map[string]outcome {
	t.Helper()
	ctx := context.Background()
	for attempt := 1; attempt <= 5; attempt++ {
		sent := time.Now()
		woke := make(chan time.Time, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if _, err := s.Do(wctx, "DEBUG", "SLEEP", strconv.Itoa(int(debugSleep/time.Second))); err != nil {
				t.Errorf("DEBUG SLEEP: %v", err)
			}
			woke <- time.Now()
		}()
		// The server sleeps once a PING goes unanswered.
		asleep := false
		for !asleep {
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err := s.Do(pctx, "PING")
			cancel()
			asleep = errors.Is(err, context.DeadlineExceeded)
			if !asleep && time.Since(sent) > debugSleep {
				break
			}
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		out := map[string]outcome{}
		began := time.Now()
		for name, l := range limiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := call(l)
				mu.Lock()
				out[name] = outcome{r, err}
				mu.Unlock()
			}()
		}
		wg.Wait()
		ended := time.Now()
		end := <-woke
		if asleep && !end.Add(-debugSleep).After(began) && ended.Before(sent.Add(debugSleep)) {
			return out
		}
		t.Logf("attempt %d: DEBUG SLEEP sent at +0, calls from +%v to +%v, the sleep's reply at +%v: the sleep did not cover the calls, again",
			attempt, began.Sub(sent).Round(time.Millisecond), ended.Sub(sent).Round(time.Millisecond), end.Sub(sent).Round(time.Millisecond))
	}
	t.Fatalf("in five attempts, DEBUG SLEEP %v never covered %d calls of 100 ms", debugSleep, len(limiters))
	return nil
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
