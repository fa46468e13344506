package valkeygo_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
	"github.com/ratelua/ratelua/valkeygo"
)

func newClient(t *testing.T) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func eval(script string) ratelua.Call {
	return ratelua.Call{Command: "EVAL", Script: script, Key: "k", Args: []string{"a"}}
}

type batcher interface {
	RunBatch(ctx context.Context, calls []ratelua.Call, replies [][]int64) []error
}

type lister interface {
	Nodes(ctx context.Context) ([]ratelua.Node, error)
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
// server's own text (less a leading "ERR ").
func TestErrorReplies(t *testing.T) {
	ctx := context.Background()
	c := valkeygo.New(newClient(t))
	for _, call := range []ratelua.Call{
		eval("return redis.error_reply('ERR ratelua: boom')"),
		eval("return redis.error_reply('BUSYGROUP no')"),
		{Command: "EVALSHA", Script: strings.Repeat("0", 40), Key: "k"},
		{Command: "FCALL", Script: "no_such_function", Key: "k"},
	} {
		// valkey-go, like rueidis, drops a leading "ERR " (so do ratelua's
		// own errors).
		want := strings.TrimPrefix(rawError(t, call), "ERR ")
		err := c.Run(ctx, call, make([]int64, 5))
		var se *ratelua.ServerError
		if !errors.As(err, &se) || se.Message != want {
			t.Errorf("%s %.30s: %v (%T, %q), want a ServerError %q", call.Command, call.Script, err, err, se.Message, want)
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
	c := valkeygo.New(newClient(t))
	for _, script := range []string{
		"return 'x'",
		"return 7",
		"return nil",
		"return {1, 2}",
		"return {1, 'a', 3, 4, 5}",
		"return {1, '2', 3, 4, 5}",
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
	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	c := valkeygo.New(vc)
	vc.Close()
	err = c.Run(ctx, eval("return {1,2,3,4,5}"), make([]int64, 5))
	if !errors.Is(err, ratelua.ErrUnavailable) || !errors.Is(err, valkey.ErrClosing) {
		t.Errorf("closed client: %v, want ErrUnavailable wrapping valkey.ErrClosing", err)
	}
	errs := c.(batcher).RunBatch(ctx, []ratelua.Call{eval("return 1")}, [][]int64{make([]int64, 5)})
	if !errors.Is(errs[0], ratelua.ErrUnavailable) {
		t.Errorf("closed client, batch: %v, want ErrUnavailable", errs[0])
	}

	s := testbench.StartSingle(t, testbench.Options{Kind: testbench.Valkey})
	gone, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	open, _ := ratelua.NewTokenBucket(valkeygo.New(gone), ratelua.Options{FailOpen: true}, ratelua.PerSecond(1, 1))
	closed, _ := ratelua.NewTokenBucket(valkeygo.New(gone), ratelua.Options{}, ratelua.PerSecond(1, 1))
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

// TestRunBatch: each call of a DoMulti gets its own reply or error.
func TestRunBatch(t *testing.T) {
	c := valkeygo.New(newClient(t)).(batcher)
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
	if !errors.As(errs[1], &se) || se.Message != "no" {
		t.Errorf("error reply in a batch: %v", errs[1])
	}
	if errs[2] == nil || errors.As(errs[2], &se) {
		t.Errorf("unknown command in a batch: %v", errs[2])
	}
}

// TestNodes: one node for a single server; replies come as strings,
// integers, arrays and nil, error replies as *ratelua.ServerError.
func TestNodes(t *testing.T) {
	ctx := context.Background()
	nodes, err := valkeygo.New(newClient(t)).(lister).Nodes(ctx)
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
	if _, err := n.Do(ctx, "NOSUCHCOMMAND"); !errors.As(err, &se) || !strings.HasPrefix(se.Message, "unknown command") {
		t.Errorf("unknown command: %v", err)
	}
}

// TestNoSlotIsUnavailable: a cluster key whose slot no node serves fails in
// valkey-go before anything is sent (valkey.ErrNoSlot): that is
// unavailability, so a FailOpen limiter admits and a fail-closed one
// denies, and neither takes it for a server's answer. On a one-node
// cluster that serves half the slots.
func TestNoSlotIsUnavailable(t *testing.T) {
	ctx := context.Background()
	s := testbench.StartSingle(t, testbench.Options{Kind: testbench.Valkey, Config: []string{
		"cluster-enabled yes", "cluster-require-full-coverage no",
	}})
	if _, err := s.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "8191"); err != nil {
		t.Fatal(err)
	}
	// The node says cluster_state:ok once it has settled (a second or two
	// after it starts).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		info, err := s.Do(ctx, "CLUSTER", "INFO")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info.(string), "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the one-node cluster is not ok after a minute: %s", info)
		}
	}
	served, unserved := "", ""
	for i := 0; served == "" || unserved == ""; i++ {
		key := "nosl{" + strconv.Itoa(i) + "}"
		slot, err := s.Do(ctx, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			t.Fatal(err)
		}
		if slot.(int64) < 8192 {
			served = key
		} else {
			unserved = key
		}
	}
	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vc.Close)
	c := valkeygo.New(vc)
	call := ratelua.Call{Command: "EVAL", Script: "return {1,2,3,4,5}", Key: served}
	if err := c.Run(ctx, call, make([]int64, 5)); err != nil {
		t.Fatalf("a key of a served slot: %v", err)
	}
	call.Key = unserved
	err = c.Run(ctx, call, make([]int64, 5))
	var se *ratelua.ServerError
	if !errors.Is(err, ratelua.ErrUnavailable) || !errors.Is(err, valkey.ErrNoSlot) || errors.As(err, &se) {
		t.Errorf("a key of a slot no node serves: %v, want ErrUnavailable wrapping valkey.ErrNoSlot", err)
	}
	errs := c.(batcher).RunBatch(ctx, []ratelua.Call{call}, [][]int64{make([]int64, 5)})
	if !errors.Is(errs[0], ratelua.ErrUnavailable) {
		t.Errorf("the same in a batch: %v, want ErrUnavailable", errs[0])
	}
	open, _ := ratelua.NewTokenBucket(c, ratelua.Options{FailOpen: true}, ratelua.PerSecond(1, 1))
	closed, _ := ratelua.NewTokenBucket(c, ratelua.Options{}, ratelua.PerSecond(1, 1))
	for i := 0; ; i++ {
		slot, err := s.Do(ctx, "CLUSTER", "KEYSLOT", open.Key(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if slot.(int64) < 8192 {
			continue
		}
		if r, err := open.Allow(ctx, strconv.Itoa(i)); !r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("FailOpen, no slot: %+v, %v; want admitted with ErrUnavailable", r, err)
		}
		if r, err := closed.Allow(ctx, strconv.Itoa(i)); r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("fail closed, no slot: %+v, %v; want denied with ErrUnavailable", r, err)
		}
		break
	}
}
