package limitertest

import (
	"errors"
	"time"

	"github.com/ratelua/ratelua"
)

// Login makes a limiter of every script with opts, by script name: the
// login case, 1 per 5 s and 5 per hour.
func Login(client ratelua.Client, opts ratelua.Options) (map[string]*ratelua.Limiter, error) {
	sw, err1 := ratelua.NewSlidingWindow(client, opts,
		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	ar, err2 := ratelua.NewAR1(client, opts,
		ratelua.Decay{Max: 1, Factor: 2, Resolution: 5 * time.Second},
		ratelua.Decay{Max: 5, Factor: 2, Resolution: time.Hour})
	zl, err3 := ratelua.NewZSetLog(client, opts,
		ratelua.Log{Max: 1, Window: 5 * time.Second},
		ratelua.Log{Max: 5, Window: time.Hour})
	tb, err4 := ratelua.NewTokenBucket(client, opts,
		ratelua.Bucket{Capacity: 1, RefillAmount: 1, RefillInterval: 5 * time.Second},
		ratelua.Bucket{Capacity: 5, RefillAmount: 1, RefillInterval: 720 * time.Second})
	return map[string]*ratelua.Limiter{ratelua.SlidingWindow: sw, ratelua.AR1: ar, ratelua.ZSetLog: zl, ratelua.TokenBucket: tb}, errors.Join(err1, err2, err3, err4)
}

// Mixed makes a limiter of every script with opts, with limits that admit
// about half of a call every 200 ms: 3 per second and 20 per minute.
func Mixed(client ratelua.Client, opts ratelua.Options) (map[string]*ratelua.Limiter, error) {
	sw, err1 := ratelua.NewSlidingWindow(client, opts,
		ratelua.Window{Max: 3, Duration: time.Second, Resolution: 100 * time.Millisecond},
		ratelua.Window{Max: 20, Duration: time.Minute, Resolution: time.Second})
	ar, err2 := ratelua.NewAR1(client, opts,
		ratelua.Decay{Max: 3, Factor: 2, Resolution: time.Second},
		ratelua.Decay{Max: 20, Factor: 1.5, Resolution: 10 * time.Second})
	zl, err3 := ratelua.NewZSetLog(client, opts,
		ratelua.Log{Max: 3, Window: time.Second},
		ratelua.Log{Max: 20, Window: time.Minute})
	tb, err4 := ratelua.NewTokenBucket(client, opts,
		ratelua.Bucket{Capacity: 3, RefillAmount: 3, RefillInterval: time.Second},
		ratelua.Bucket{Capacity: 20, RefillAmount: 1, RefillInterval: 3 * time.Second})
	return map[string]*ratelua.Limiter{ratelua.SlidingWindow: sw, ratelua.AR1: ar, ratelua.ZSetLog: zl, ratelua.TokenBucket: tb}, errors.Join(err1, err2, err3, err4)
}
