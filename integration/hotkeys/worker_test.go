package hotkeys

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

// workerEnv names the environment variable that makes this test binary a
// worker: its value is the worker's configuration (workerConfig, JSON).
const workerEnv = "RATELUA_HOTKEYS_WORKER"

// workerConfig is what one worker process runs.
type workerConfig struct {
	Addrs      []string         // the server's addresses (a cluster's: all of them)
	Prefix     string           // the limiter's prefix
	Key        string           // the one hot event key
	Buckets    []ratelua.Bucket // the token buckets of the limiter (token_bucket)
	Windows    []ratelua.Window // or its windows (sliding_window)
	Logs       []ratelua.Log    // or its logs (zset_log)
	Goroutines int              // goroutines deciding the key
	Duration   time.Duration    // how long they decide
	Lifetime   time.Duration    // HotKeys.Lifetime
	DenyCache  int              // Options.DenyCache
	Pace       time.Duration    // the first PacedFor: a pause after each decision
	PacedFor   time.Duration    // how long the paced phase lasts; then no pause
	Stream     bool             // write each admission as it happens (else at the end)
	Log        string           // the log file (its lines: lineAdmit...)
}

// The lines of a worker's log, each written by one write to the file as
// it happens (a worker that is SIGKILLed leaves every line it wrote):
//
//	A <unix ns> <unix ns>             an admission: when the Allow that made
//	                                  it began and when it returned (written
//	                                  at the end unless Stream)
//	R <unix ns> <units> <latency ns>  a batch's reserve the server admitted
//	S <unix ns> <units used>          a batch's settle (its give-back)
//	E <decisions> <admitted> <calls> <max admitted Allow ns> <local>
//	  <paced decisions> <paced calls> the end, after Close
const (
	lineAdmit   = 'A'
	lineReserve = 'R'
	lineSettle  = 'S'
	lineEnd     = 'E'
)

// countingClient counts the calls sent to the server, and those sent
// before paced apart.
type countingClient struct {
	ratelua.Client
	paced        time.Time
	calls, early atomic.Int64
}

// Run counts the call and sends it.
func (c *countingClient) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	c.calls.Add(1)
	if time.Now().Before(c.paced) {
		c.early.Add(1)
	}
	return c.Client.Run(ctx, call, reply)
}

// runWorker runs the worker configured by cfg (JSON) and returns its exit
// code: 0 when it ran and closed, 2 on any error (written to stderr).
func runWorker(cfg string) int {
	if err := work(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "hotkeys worker:", err)
		return 2
	}
	return 0
}

func work(text string) error {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(text), &cfg); err != nil {
		return fmt.Errorf("read the configuration: %w", err)
	}
	log, err := os.OpenFile(cfg.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open the log: %w", err)
	}
	defer log.Close()
	var writeErr atomic.Value
	write := func(b []byte) {
		if _, err := log.Write(b); err != nil {
			writeErr.CompareAndSwap(nil, err)
		}
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cfg.Addrs, DisableCache: true})
	if err != nil {
		return fmt.Errorf("connect to %v: %w", cfg.Addrs, err)
	}
	defer rc.Close()
	begin := time.Now()
	end, paced := begin.Add(cfg.Duration), begin.Add(cfg.PacedFor)
	client := &countingClient{Client: ratelua.Rueidis(rc), paced: paced}
	var local atomic.Int64
	opts := ratelua.Options{
		Prefix:    cfg.Prefix,
		DenyCache: cfg.DenyCache,
		HotKeys:   &ratelua.HotKeys{Lifetime: cfg.Lifetime},
		Observe: func(_ context.Context, e ratelua.Event) {
			switch {
			case e.Kind == ratelua.KindBatch:
				local.Add(1)
			case e.Kind == ratelua.KindReserve && e.Result.Allowed && e.Err == nil:
				write(fmt.Appendf(nil, "%c %d %d %d\n", lineReserve, time.Now().UnixNano(), e.N, e.Latency.Nanoseconds()))
			case e.Kind == ratelua.KindSettle && e.Err == nil:
				write(fmt.Appendf(nil, "%c %d %d\n", lineSettle, time.Now().UnixNano(), e.N))
			}
		},
	}
	l, err := newLimiter(client, opts, cfg)
	if err != nil {
		return fmt.Errorf("make the limiter: %w", err)
	}
	ctx := context.Background()
	var decisions, admitted, maxAllow, pacedDecisions atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Goroutines)
	for range cfg.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n, a, longest, np int64
			var admits []int64 // start, end, start, end, ...
			defer func() {
				if len(admits) > 0 {
					var b []byte
					for i := 0; i < len(admits); i += 2 {
						b = append(b, lineAdmit, ' ')
						b = strconv.AppendInt(b, admits[i], 10)
						b = append(b, ' ')
						b = strconv.AppendInt(b, admits[i+1], 10)
						b = append(b, '\n')
					}
					write(b)
				}
				decisions.Add(n)
				pacedDecisions.Add(np)
				admitted.Add(a)
				for {
					m := maxAllow.Load()
					if longest <= m || maxAllow.CompareAndSwap(m, longest) {
						return
					}
				}
			}()
			buf := make([]byte, 0, 32)
			for {
				start := time.Now()
				if !start.Before(end) {
					return
				}
				r, err := l.Allow(ctx, cfg.Key)
				if err != nil {
					errs <- err
					return
				}
				n++
				if r.Allowed {
					at := time.Now()
					a++
					longest = max(longest, at.Sub(start).Nanoseconds())
					if cfg.Stream {
						buf = append(buf[:0], lineAdmit, ' ')
						buf = strconv.AppendInt(buf, start.UnixNano(), 10)
						buf = append(buf, ' ')
						buf = strconv.AppendInt(buf, at.UnixNano(), 10)
						write(append(buf, '\n'))
					} else {
						admits = append(admits, start.UnixNano(), at.UnixNano())
					}
				}
				if start.Before(paced) {
					np++
					time.Sleep(cfg.Pace)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return fmt.Errorf("decide %q: %w", cfg.Key, err)
	}
	if err := l.Close(ctx); err != nil {
		return fmt.Errorf("close the limiter: %w", err)
	}
	write(fmt.Appendf(nil, "%c %d %d %d %d %d %d %d\n", lineEnd, decisions.Load(), admitted.Load(), client.calls.Load(), maxAllow.Load(), local.Load(), pacedDecisions.Load(), client.early.Load()))
	if err, _ := writeErr.Load().(error); err != nil {
		return fmt.Errorf("write the log: %w", err)
	}
	return nil
}

// newLimiter is the limiter of cfg's limits: its buckets, windows or logs.
func newLimiter(client ratelua.Client, opts ratelua.Options, cfg workerConfig) (*ratelua.Limiter, error) {
	switch {
	case len(cfg.Windows) > 0:
		return ratelua.NewSlidingWindow(client, opts, cfg.Windows...)
	case len(cfg.Logs) > 0:
		return ratelua.NewZSetLog(client, opts, cfg.Logs...)
	default:
		return ratelua.NewTokenBucket(client, opts, cfg.Buckets...)
	}
}
