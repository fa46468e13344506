package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// lateClient runs every call on the server, then, when an acquire's
// context has a deadline, waits for it and answers its error: the server
// took the slots, the caller never learned it (a reply later than the
// deadline, as a 5 ms deadline gets on a busy network).
type lateClient struct {
	ratelua.Client
	late *atomic.Int64 // the acquires answered late
}

func (c lateClient) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	err := c.Client.Run(context.WithoutCancel(ctx), call, reply)
	if _, ok := ctx.Deadline(); ok && call.Args[3] == "0" && call.Args[0] != "0" {
		c.late.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// eventually polls cond every few milliseconds for at most 20 s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s: %s", what, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConcurrencyUnknownOutcomeOnServers: 3 acquires whose 5 ms deadline
// passes while the script runs leave every slot free afterwards (released
// by their ids in the background) and are never admitted, FailOpen or not;
// a patient caller then gets a slot (issue 30 row H3).
func TestConcurrencyUnknownOutcomeOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		for _, failOpen := range []bool{false, true} {
			prefix := fmt.Sprintf("unknown-%s-%v", t.Name(), failOpen)
			late := new(atomic.Int64)
			sem, err := ratelua.NewConcurrency(lateClient{ratelua.Rueidis(client), late}, ratelua.Options{Prefix: prefix, FailOpen: failOpen},
				ratelua.Slots{Max: 2, Lease: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// Loaded first, so that the acquires' EVALSHA runs.
			if _, err := sem.Peek(context.Background(), "k"); err != nil {
				t.Fatal(err)
			}
			// 3 acquires that reach the server (on a busy machine a 5 ms
			// deadline may pass before one is sent: then it is tried again).
			for i := 0; late.Load() < 3; i++ {
				if i == 100 {
					t.Fatalf("FailOpen %v: %d of 100 acquires with a 5 ms deadline reached the server", failOpen, late.Load())
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				l, r, err := sem.Acquire(ctx, "k")
				cancel()
				if l != nil || r.Allowed || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("FailOpen %v: acquire %d with a 5 ms deadline: %v %+v %v, want no lease, not allowed, the deadline's error", failOpen, i, l, r, err)
				}
			}
			eventually(t, "the 3 acquires' slots back", func() (bool, string) {
				r, err := sem.Peek(context.Background(), "k")
				return err == nil && r.Remaining == 2, fmt.Sprintf("%+v %v", r, err)
			})
			l, r, err := sem.Acquire(context.Background(), "k")
			if err != nil || l == nil || !r.Allowed || l.Local() {
				t.Fatalf("FailOpen %v: a patient caller: %v %+v %v", failOpen, l, r, err)
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// concurrencyRun runs the newest concurrency script by EVALSHA on key.
func concurrencyRun(ctx context.Context, client rueidis.Client, key string, args ...string) ([]int64, error) {
	s, err := ratelua.NewRegistry().Latest(ratelua.Concurrency)
	if err != nil {
		return nil, err
	}
	reply := make([]int64, 5)
	err = s.Run(ctx, ratelua.Rueidis(client), key, args, reply)
	return reply, err
}

// serverSeconds is the server's TIME in seconds.
func serverSeconds(t *testing.T, ctx context.Context, client rueidis.Client) int64 {
	t.Helper()
	now, err := client.Do(ctx, client.B().Time().Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	s, err := strconv.ParseInt(now[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConcurrencyClocksOnServers: a caller 20 s behind keeps its lease as
// the others count it (Max 2 never has 3 holders); a caller an hour ahead
// of the server evicts nobody; a caller at year 9999 holds the key and
// its TTL no longer than the lease time (issue 30 rows M4 and M5).
func TestConcurrencyClocksOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		acquire := func(key string, now int64, max string) []int64 {
			t.Helper()
			got, err := concurrencyRun(ctx, client, key, "1", "s", strconv.FormatInt(now, 10), "0", max, "30")
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		key := "clock:{behind}:" + t.Name()
		now := serverSeconds(t, ctx, client)
		client.Do(ctx, client.B().Del().Key(key).Build())
		acquire(key, now, "2")
		if got := acquire(key, now-20, "2"); got[0] != 1 || got[3] != 30 {
			t.Fatalf("20 s behind: %v, want a lease held 30 s from the last write", got)
		}
		if got := acquire(key, now+15, "2"); got[0] != 0 {
			t.Fatalf("a third holder 15 s later: %v, want denied", got)
		}

		key = "clock:{ahead}:" + t.Name()
		client.Do(ctx, client.B().Del().Key(key).Build())
		acquire(key, now, "2")
		acquire(key, now, "2")
		if got := acquire(key, now+3600, "2"); got[0] != 0 {
			t.Fatalf("an hour ahead: %v, want denied, nobody evicted", got)
		}
		if n, err := client.Do(ctx, client.B().Zcount().Key(key).Min("0").Max("+inf").Build()).AsInt64(); err != nil || n != 2 {
			t.Fatalf("slots after the caller an hour ahead: %d %v, want the 2 leases", n, err)
		}

		key = "clock:{9999}:" + t.Name()
		client.Do(ctx, client.B().Del().Key(key).Build())
		if got := acquire(key, 253402300799, "1"); got[0] != 1 || got[3] != 30 {
			t.Fatalf("year 9999: %v, want a lease of 30 s", got)
		}
		if pttl, err := client.Do(ctx, client.B().Pttl().Key(key).Build()).AsInt64(); err != nil || pttl <= 0 || pttl > 30_000 {
			t.Fatalf("PTTL %d %v after year 9999, want at most the lease time", pttl, err)
		}
		got, err := concurrencyRun(ctx, client, key, "1", "s", "", "0", "1", "30")
		if err != nil || got[0] != 0 || got[2] > 30 || got[2] < 1 {
			t.Fatalf("the server clock after year 9999: %v %v, want denied for at most the lease time", got, err)
		}
	})
}

// TestConcurrencyRefusesOtherStateOnServers: a key holding another
// script's state (a hash, a string, a sorted set without '#' and '@') is
// refused by every mode with ERR ratelua and left byte for byte as it was
// (issue 30 row L2).
func TestConcurrencyRefusesOtherStateOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		key := "other:{state}:" + t.Name()
		for _, state := range []func() rueidis.Completed{
			func() rueidis.Completed {
				return client.B().Hset().Key(key).FieldValue().FieldValue("m", "1 2 3").Build()
			},
			func() rueidis.Completed { return client.B().Set().Key(key).Value("1000 0.5").Build() },
			func() rueidis.Completed {
				return client.B().Zadd().Key(key).ScoreMember().ScoreMember(1000, "1000-1").ScoreMember(1001, "1001-1").Build()
			},
		} {
			first := state()
			kind := first.Commands()[0]
			for _, args := range [][]string{
				{"1", "s", "1000", "0", "2", "30"},
				{"1", "s", "1000", "0", "2", "30", "77"},
				{"0", "s", "", "0", "2", "30"},
				{"-1", "s", "1000", "0", "2", "30"},
				{"1", "s", "1000", "renew", "2", "30", "1"},
				{"1", "s", "1000", "release", "2", "30", "1"},
			} {
				client.Do(ctx, client.B().Del().Key(key).Build())
				if err := client.Do(ctx, state()).Error(); err != nil {
					t.Fatal(err)
				}
				client.Do(ctx, client.B().Pexpire().Key(key).Milliseconds(600_000).Build())
				before, err := client.Do(ctx, client.B().Dump().Key(key).Build()).ToString()
				if err != nil {
					t.Fatal(err)
				}
				_, err = concurrencyRun(ctx, client, key, args...)
				if err == nil || !strings.Contains(err.Error(), "ratelua: KEYS[1] holds a ") {
					t.Errorf("%s, ARGV %q: %v, want ERR ratelua naming the key's state", kind, args, err)
				}
				after, err := client.Do(ctx, client.B().Dump().Key(key).Build()).ToString()
				if err != nil || after != before {
					t.Errorf("%s, ARGV %q: the key changed (%v)", kind, args, err)
				}
			}
		}
	})
}
