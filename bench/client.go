package main

import (
	"context"
	"fmt"
	"log"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"

	"github.com/ratelua/ratelua"
)

// The client cost of a decision: ns/op and allocs/op of ratelua's Allow
// and of a 100-key AllowBatch on a client that answers every command with a
// canned reply (no network), run with testing.Benchmark from this command.

// rueidislimiter's Allow, measured once by hand the same way (a canned
// 2-integer reply on a rueidis mock client, testing.Benchmark, best of 3)
// in a throwaway module outside this repository, because
// github.com/redis/rueidis/rueidislimiter cannot be fetched from this
// machine's module proxy: its source came from a snapshot of
// github.com/redis/rueidis. These are static figures, not re-measured by
// make bench.
var rueidislimiterAllow = clientFigure{
	name:   "rueidislimiter Allow (fixed window, 1 limit)",
	nsOp:   rueidislimiterNs,
	bytes:  rueidislimiterBytes,
	allocs: rueidislimiterAllocs,
}

const (
	rueidislimiterNs     = 292
	rueidislimiterBytes  = 256
	rueidislimiterAllocs = 4
	rueidislimiterCommit = "256d25aa963c3b5919351c1943a5eb4d22d53fee"
	rueidislimiterNote   = "measured on 2026-11-22 on this machine (go1.26, load pinned to CPU 1 with taskset) from github.com/redis/rueidis at commit " +
		rueidislimiterCommit + " (v1.0.76-4-g256d25a; rueidislimiter and mock replaced to that source in a throwaway module in /tmp): " +
		"NewRateLimiter with a ClientBuilder returning a rueidis mock client whose Do answers [1, resetAt], Limit 100, Window 1 minute, " +
		"Allow(ctx, \"user:42\") in a b.Loop with ReportAllocs; best of 3 testing.Benchmark runs"
)

// clientFigure is one client benchmark's result.
type clientFigure struct {
	name   string
	nsOp   float64
	bytes  int64
	allocs int64
	perKey bool // a 100-key batch: also per key
}

// cannedClient answers every command with one canned reply.
type cannedClient struct {
	*mock.Client
	reply rueidis.RedisResult
}

func (c cannedClient) Do(context.Context, rueidis.Completed) rueidis.RedisResult { return c.reply }

func (c cannedClient) DoMulti(_ context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, len(cmds))
	for i := range out {
		out[i] = c.reply
	}
	return out
}

// cannedReply is an allowed 5-integer reply of limit 1.
func cannedReply() rueidis.RedisResult {
	return mock.Result(mock.RedisArray(mock.RedisInt64(1), mock.RedisInt64(99), mock.RedisInt64(0), mock.RedisInt64(60000), mock.RedisInt64(1)))
}

// clientBench is one client benchmark: build a limiter on the canned
// client, then decide in the loop.
type clientBench struct {
	name   string
	batch  bool
	limits func(c rueidis.Client) (*ratelua.Limiter, error)
}

func clientBenches() []clientBench {
	// The default options: the server's clock (no Clock), no CountDenied.
	o := ratelua.Options{Prefix: "rl"}
	return []clientBench{
		{name: "ratelua Allow, token_bucket 1 limit", limits: func(c rueidis.Client) (*ratelua.Limiter, error) {
			return ratelua.NewTokenBucket(ratelua.Rueidis(c), o, ratelua.Bucket{Capacity: 100, RefillAmount: 100, RefillInterval: time.Minute})
		}},
		{name: "ratelua Allow, ar1 1 limit", limits: func(c rueidis.Client) (*ratelua.Limiter, error) {
			return ratelua.NewAR1(ratelua.Rueidis(c), o, ratelua.Decay{Max: 100, Factor: 2, Resolution: time.Minute})
		}},
		{name: "ratelua Allow, zset_log max 100", limits: func(c rueidis.Client) (*ratelua.Limiter, error) {
			return ratelua.NewZSetLog(ratelua.Rueidis(c), o, ratelua.Log{Max: 100, Window: time.Minute})
		}},
		{name: "ratelua Allow, sliding_window 1 limit", limits: func(c rueidis.Client) (*ratelua.Limiter, error) {
			return ratelua.NewSlidingWindow(ratelua.Rueidis(c), o, ratelua.Window{Max: 100, Duration: time.Minute, Resolution: time.Second})
		}},
		{name: "ratelua Allow, sliding_window 3 limits", limits: func(c rueidis.Client) (*ratelua.Limiter, error) {
			return ratelua.NewSlidingWindow(ratelua.Rueidis(c), o,
				ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
				ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute},
				ratelua.Window{Max: 1000, Duration: 24 * time.Hour, Resolution: time.Hour})
		}},
		{name: "ratelua AllowBatch, 100 keys, token_bucket 1 limit", batch: true, limits: func(c rueidis.Client) (*ratelua.Limiter, error) {
			return ratelua.NewTokenBucket(ratelua.Rueidis(c), o, ratelua.Bucket{Capacity: 100, RefillAmount: 100, RefillInterval: time.Minute})
		}},
	}
}

// runClient runs each client benchmark whose name matches only, rounds
// times, and keeps the fastest run.
func runClient(ctx context.Context, rounds int, only *regexp.Regexp) ([]clientFigure, error) {
	var out []clientFigure
	requests := make([]ratelua.Request, 100)
	for i := range requests {
		requests[i] = ratelua.Request{Key: "user:" + strconv.Itoa(i), N: 1}
	}
	for _, cb := range clientBenches() {
		if !only.MatchString(cb.name) {
			continue
		}
		var best clientFigure
		var failed error
		for r := range rounds {
			res := testing.Benchmark(func(b *testing.B) {
				l, err := cb.limits(cannedClient{Client: mock.NewClient(gomock.NewController(b)), reply: cannedReply()})
				if err != nil {
					failed = err
					return
				}
				b.ReportAllocs()
				if cb.batch {
					for b.Loop() {
						for _, o := range l.AllowBatch(ctx, requests) {
							if o.Err != nil {
								failed = o.Err
								return
							}
						}
					}
					return
				}
				for b.Loop() {
					if _, err := l.Allow(ctx, "user:42"); err != nil {
						failed = err
						return
					}
				}
			})
			if failed != nil {
				return nil, fmt.Errorf("%s: %w", cb.name, failed)
			}
			f := clientFigure{name: cb.name, nsOp: float64(res.T.Nanoseconds()) / float64(res.N), bytes: res.AllocedBytesPerOp(), allocs: res.AllocsPerOp(), perKey: cb.batch}
			log.Printf("client round %d: %-52s %9.0f ns/op %7d B/op %5d allocs/op", r+1, f.name, f.nsOp, f.bytes, f.allocs)
			if r == 0 || f.nsOp < best.nsOp {
				best = f
			}
		}
		out = append(out, best)
	}
	return out, nil
}
