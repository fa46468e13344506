package goredis_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/goredis"
	"github.com/ratelua/ratelua/testbench"
)

func newClient(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func eval(script string) ratelua.Call {
	return ratelua.Call{Command: "EVAL", Script: script, Key: "k", Args: []string{"a"}}
}

// rawError is the text of the error reply the server gives to call, read
// by testbench's own RESP client.
func rawError(t *testing.T, call ratelua.Call) string {
	t.Helper()
	_, err := server.Do(context.Background(), append([]string{call.Command, call.Script, "1", call.Key}, call.Args...)...)
	var re testbench.ReplyError
	if !errors.As(err, &re) {
		t.Fatalf("%s: %v, want an error reply", call.Command, err)
	}
	return string(re)
}

// TestErrorReplies: every error reply is a *ratelua.ServerError with the
// server's own text, NOSCRIPT included (go-redis's EvalSha rewords it).
func TestErrorReplies(t *testing.T) {
	ctx := context.Background()
	c := goredis.New(newClient(t))
	for _, call := range []ratelua.Call{
		eval("return redis.error_reply('ERR ratelua: boom')"),
		eval("return redis.error_reply('BUSYGROUP no')"),
		{Command: "EVALSHA", Script: strings.Repeat("0", 40), Key: "k"},
		{Command: "FCALL", Script: "no_such_function", Key: "k"},
	} {
		want := rawError(t, call)
		err := c.Run(ctx, call, make([]int64, 5))
		var se *ratelua.ServerError
		if !errors.As(err, &se) || se.Message != want {
			t.Errorf("%s %.30s: %v (%T), want a ServerError %q", call.Command, call.Script, err, err, want)
		}
		if !errors.Is(err, ratelua.ErrScript) || errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("%s %.30s: %v is not ErrScript alone", call.Command, call.Script, err)
		}
	}
}

// TestWrongShapes: a reply that is not an array of exactly len(reply)
// integers is a plain error: neither an error reply nor unavailability.
func TestWrongShapes(t *testing.T) {
	ctx := context.Background()
	c := goredis.New(newClient(t))
	for _, script := range []string{
		"return 'x'",
		"return 7",
		"return nil",
		"return {1, 2}",
		"return {1, 'a', 3, 4, 5}",
		"return {1, 2, 3, 4, 5, 6}",
	} {
		err := c.Run(ctx, eval(script), make([]int64, 5))
		var se *ratelua.ServerError
		if err == nil || errors.As(err, &se) || errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("%s: %v, want a plain error", script, err)
		}
	}
	reply := make([]int64, 5)
	if err := c.Run(ctx, eval("return {1, -2, 3, 4, 5}"), reply); err != nil || reply[1] != -2 || reply[4] != 5 {
		t.Errorf("five integers: %v %v", reply, err)
	}
	if err := c.Run(ctx, ratelua.Call{Command: "SCRIPT", Script: "x"}, reply); err == nil {
		t.Error("an unknown script command was sent")
	}
}

// TestUnavailable: a closed client is unavailability; a server that is
// gone is a network error that ratelua counts as unavailability, so a
// FailOpen limiter admits while a fail-closed one denies.
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	c := goredis.New(rdb)
	if err := c.Run(ctx, eval("return {1,2,3,4,5}"), make([]int64, 5)); err != nil {
		t.Fatal(err)
	}
	rdb.Close()
	err := c.Run(ctx, eval("return {1,2,3,4,5}"), make([]int64, 5))
	if !errors.Is(err, ratelua.ErrUnavailable) || !errors.Is(err, redis.ErrClosed) {
		t.Errorf("closed client: %v, want ErrUnavailable wrapping redis.ErrClosed", err)
	}
	errs := c.(interface {
		RunBatch(context.Context, []ratelua.Call, [][]int64) []error
	}).RunBatch(ctx, []ratelua.Call{eval("return 1")}, [][]int64{make([]int64, 5)})
	if !errors.Is(errs[0], ratelua.ErrUnavailable) {
		t.Errorf("closed client, batch: %v, want ErrUnavailable", errs[0])
	}

	s := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	gone := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer gone.Close()
	open, _ := ratelua.NewTokenBucket(goredis.New(gone), ratelua.Options{FailOpen: true}, ratelua.PerSecond(1, 1))
	closed, _ := ratelua.NewTokenBucket(goredis.New(gone), ratelua.Options{}, ratelua.PerSecond(1, 1))
	if r, err := closed.Allow(ctx, "k"); err != nil || !r.Allowed {
		t.Fatalf("while up: %+v %v", r, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if r, err := open.Allow(ctx, "k"); !r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) {
		t.Errorf("fail open, server stopped: %+v, %v", r, err)
	}
	if r, err := closed.Allow(ctx, "k"); r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) {
		t.Errorf("fail closed, server stopped: %+v, %v", r, err)
	}
}

type batcher interface {
	RunBatch(ctx context.Context, calls []ratelua.Call, replies [][]int64) []error
}

type lister interface {
	Nodes(ctx context.Context) ([]ratelua.Node, error)
}

// TestRunBatch: each call of a pipeline gets its own reply or error.
func TestRunBatch(t *testing.T) {
	c := goredis.New(newClient(t)).(batcher)
	replies := [][]int64{make([]int64, 5), make([]int64, 5), make([]int64, 5), make([]int64, 5)}
	errs := c.RunBatch(context.Background(), []ratelua.Call{
		eval("return {1,2,3,4,5}"),
		eval("return redis.error_reply('ERR no')"),
		{Command: "GET", Key: "k"},
		eval("return {5,4,3,2,1}"),
	}, replies)
	var se *ratelua.ServerError
	if errs[0] != nil || replies[0][4] != 5 || errs[3] != nil || replies[3][0] != 5 {
		t.Errorf("good calls: %v %v / %v %v", replies[0], errs[0], replies[3], errs[3])
	}
	if !errors.As(errs[1], &se) || se.Message != "ERR no" {
		t.Errorf("error reply in a batch: %v", errs[1])
	}
	if errs[2] == nil || errors.As(errs[2], &se) {
		t.Errorf("unknown command in a batch: %v", errs[2])
	}
}

// TestNodes: a *redis.Client is its one node; replies come as strings,
// integers, arrays and nil, error replies as *ratelua.ServerError.
func TestNodes(t *testing.T) {
	ctx := context.Background()
	nodes, err := goredis.New(newClient(t)).(lister).Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Addr != addr {
		t.Fatalf("Nodes: %+v, %v", nodes, err)
	}
	n := nodes[0]
	if v, err := n.Do(ctx, "SET", "nodes:k", "v"); v != "OK" || err != nil {
		t.Errorf("SET: %#v %v", v, err)
	}
	if v, err := n.Do(ctx, "GET", "nodes:missing"); v != nil || err != nil {
		t.Errorf("GET of a missing key: %#v %v", v, err)
	}
	if v, err := n.Do(ctx, "EXISTS", "nodes:k"); v != int64(1) || err != nil {
		t.Errorf("EXISTS: %#v %v", v, err)
	}
	if v, err := n.Do(ctx, "ROLE"); err != nil || v.([]any)[0] != "master" {
		t.Errorf("ROLE: %#v %v", v, err)
	}
	var se *ratelua.ServerError
	if _, err := n.Do(ctx, "NOSUCHCOMMAND"); !errors.As(err, &se) || !strings.HasPrefix(se.Message, "ERR unknown command") || strings.HasPrefix(se.Message, "ERR ERR") {
		t.Errorf("unknown command: %v", err)
	}
	if _, err := goredis.New(otherUniversal{newClient(t)}).(lister).Nodes(ctx); !errors.Is(err, ratelua.ErrNotSupported) {
		t.Errorf("a client of unknown type: %v, want ErrNotSupported", err)
	}
}

// otherUniversal is a redis.UniversalClient of a type goredis does not
// know.
type otherUniversal struct{ *redis.Client }

// TestRing: a ring of two servers; keys spread over both shards, a batch
// reaches both, ResetPrefix walks both.
func TestRing(t *testing.T) {
	ctx := context.Background()
	a := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	b := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr, "b": b.Addr}})
	defer ring.Close()
	client := goredis.New(ring)
	at := time.Unix(1_800_000_000, 0)
	l, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "ring", Clock: func() time.Time { return at }}, ratelua.PerSecond(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	requests := make([]ratelua.Request, 200)
	for i := range requests {
		requests[i] = ratelua.Request{Key: "user-" + strconv.Itoa(i), N: 1}
	}
	for i, o := range l.AllowBatch(ctx, requests) {
		if o.Err != nil || !o.Result.Allowed || o.Result.Remaining != 1 {
			t.Fatalf("request %d: %+v", i, o)
		}
	}
	for _, s := range []*testbench.Node{a, b} {
		if n, err := s.Do(ctx, "DBSIZE"); err != nil || n.(int64) < 50 {
			t.Errorf("%s holds %v keys (%v), want about half", s.Addr, n, err)
		}
	}
	nodes, err := client.(lister).Nodes(ctx)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("Nodes: %+v %v", nodes, err)
	}
	n, err := ratelua.ResetPrefix(ctx, client, "ring", false, nil)
	if err != nil || n != 200 {
		t.Errorf("ResetPrefix: %d, %v; want 200", n, err)
	}
	if r, err := l.Peek(ctx, "user-7"); err != nil || r.Remaining != 2 {
		t.Errorf("after ResetPrefix: %+v %v", r, err)
	}

	// Both shards stopped: every call is unavailability, first as a
	// refused connection, then, once the ring's heartbeat has marked both
	// shards down, as "all ring shards are down"; a FailOpen limiter
	// admits throughout.
	open, _ := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "ring", FailOpen: true}, ratelua.PerSecond(1, 2))
	for _, s := range []*testbench.Node{a, b} {
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for calls := 1; ; calls++ {
		r, err := open.Allow(ctx, "user-7")
		if !r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) {
			t.Fatalf("call %d with both shards stopped: %+v, %v; want allowed with ErrUnavailable", calls, r, err)
		}
		if strings.Contains(err.Error(), "all ring shards are down") {
			break
		}
		if calls == 1000 {
			t.Fatalf("the ring never marked its shards down: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // the heartbeat runs every 500 ms
	}
}
