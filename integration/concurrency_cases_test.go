package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
)

// caseConcurrency: a Semaphore of 10 slots by EVALSHA and by FCALL, on a
// frozen caller clock so no lease expires: 64 callers acquiring 4 times
// each get exactly 10 leases; each release frees its slot; a reset makes
// every lease lost; a lease of 3 slots is renewed and released whole; and
// ResetPrefix deletes the semaphore's keys.
func caseConcurrency(t *testing.T, e env) {
	ctx := context.Background()
	// Behind the server's clock: v6 counts a caller clock ahead of TIME
	// as TIME, which moves.
	at := time.Unix(1_700_000_000, 0)
	for _, functions := range []bool{false, true} {
		prefix := fmt.Sprintf("%s-%v", e.prefix, functions)
		sem, err := ratelua.NewConcurrency(e.client, ratelua.Options{Prefix: prefix, Clock: func() time.Time { return at }, Functions: functions},
			ratelua.Slots{Max: 10, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var leases []*ratelua.Lease
		var failed atomic.Int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for range 4 {
					lease, _, err := sem.Acquire(ctx, "hot")
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
					if lease != nil {
						mu.Lock()
						leases = append(leases, lease)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		if len(leases) != 10 || failed.Load() != 0 {
			t.Fatalf("functions %v: %d leases of 256 acquires, %d errors (%v); want exactly 10 and none", functions, len(leases), failed.Load(), firstErr.Load())
		}
		ids := map[int64]bool{}
		for _, l := range leases {
			ids[l.ID()] = true
		}
		if len(ids) != 10 {
			t.Errorf("functions %v: %d distinct lease ids of 10", functions, len(ids))
		}
		for i, l := range leases[:4] {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if r, err := sem.Peek(ctx, "hot"); err != nil || r.Remaining != int64(i+1) {
				t.Fatalf("after %d releases: %+v %v", i+1, r, err)
			}
		}
		if err := leases[4].Renew(ctx); err != nil {
			t.Errorf("renew: %v", err)
		}
		if err := sem.Reset(ctx, "hot"); err != nil {
			t.Fatal(err)
		}
		for _, l := range leases[4:] {
			if err := l.Renew(ctx); !errors.Is(err, ratelua.ErrLeaseLost) {
				t.Fatalf("renewing lease %d after a reset: %v, want ErrLeaseLost", l.ID(), err)
			}
		}
		three, r, err := sem.AcquireN(ctx, "hot", 3)
		if err != nil || three == nil || r.Remaining != 7 || ids[three.ID()] {
			t.Fatalf("3 slots after the reset: %v %+v %v (ids before: %v)", three, r, err, ids)
		}
		if err := three.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if err := three.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := ratelua.ResetPrefix(ctx, e.client, prefix, false, nil); err != nil || n != 1 {
			t.Errorf("ResetPrefix: %d, %v; want the semaphore's key", n, err)
		}
	}
}
