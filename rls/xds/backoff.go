package xds

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff paces the opening of a new stream after one broke: the first
// wait is Initial, each next one twice the last, at most Max; with
// Jitter, each wait is drawn from [w*(1-RandomFactor), w*(1+RandomFactor)],
// at most Max. A stream on which a response arrived starts again from
// Initial. The zero value is the reference's defaults
// (XDS_CLIENT_BACKOFF_INITIAL_INTERVAL 10 s, XDS_CLIENT_BACKOFF_MAX_INTERVAL
// 60 s, XDS_CLIENT_BACKOFF_RANDOM_FACTOR 0.5), without jitter.
type Backoff struct {
	Initial      time.Duration
	Max          time.Duration
	RandomFactor float64
	Jitter       bool
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial == 0 {
		b.Initial = 10 * time.Second
	}
	if b.Max == 0 {
		b.Max = 60 * time.Second
	}
	return b
}

// check refuses a backoff that cannot work.
func (b Backoff) check() error {
	b = b.withDefaults()
	switch {
	case b.Initial < 0:
		return fmt.Errorf("%w: backoff initial interval %v is negative", ErrOptions, b.Initial)
	case b.Max < b.Initial:
		return fmt.Errorf("%w: backoff max interval %v is below the initial interval %v", ErrOptions, b.Max, b.Initial)
	case b.RandomFactor < 0 || b.RandomFactor > 1:
		return fmt.Errorf("%w: backoff random factor %v is not from 0 to 1", ErrOptions, b.RandomFactor)
	}
	return nil
}

// Delay is the wait before attempt (0 the first after a stream broke).
func (b Backoff) Delay(attempt int) time.Duration {
	b = b.withDefaults()
	w := b.Initial
	for i := 0; i < attempt && w < b.Max; i++ {
		w *= 2
	}
	w = min(w, b.Max)
	if b.Jitter && b.RandomFactor > 0 {
		f := 1 + b.RandomFactor*(2*rand.Float64()-1)
		w = time.Duration(float64(w) * f)
	}
	return min(w, b.Max)
}
