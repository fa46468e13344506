package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// eventKeys are the 10,000 event keys every contender is driven over.
var eventKeys = func() []string {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	return keys
}()

// hotKeys are n event keys for the scaling sweeps, where a few keys must
// each see many events so that their state is full.
func hotKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "hot:" + strconv.Itoa(i)
	}
	return keys
}

// drive runs callers goroutines that each decide a uniformly random key of
// keys in a loop, for d. It returns the number of decisions and the first
// error, if any (a limiter that errors is not measured).
func drive(ctx context.Context, r runner, keys []string, callers int, d time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var n atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c)+1, uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				err := r.Decide(ctx, keys[rng.IntN(len(keys))])
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					first.CompareAndSwap(nil, err)
					cancel()
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, ok := first.Load().(error); ok {
		return n.Load(), fmt.Errorf("decide: %w", err)
	}
	return n.Load(), nil
}

// once decides every event key once, sequentially in pipelined batches of
// concurrent callers: the memory phase.
func once(ctx context.Context, r runner, callers int) error {
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < len(eventKeys); i += callers {
				if err := r.Decide(ctx, eventKeys[i]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
