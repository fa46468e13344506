package ratelua

import (
	"time"

	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/model"
)

// Bucket holds up to Capacity tokens and refills RefillAmount tokens every
// RefillInterval, continuously; an event costs one token (AllowN: n). A
// new bucket is full.
type Bucket struct {
	Capacity       int64
	RefillAmount   int64
	RefillInterval time.Duration
}

// PerSecond is a bucket of burst tokens refilled at rate per second.
func PerSecond(rate, burst int64) Bucket {
	return Bucket{Capacity: burst, RefillAmount: rate, RefillInterval: time.Second}
}

// NewTokenBucket returns a token-bucket limiter (script token_bucket): per
// event key, one integer with one bucket (from v6, the default), one short
// string with several.
func NewTokenBucket(client Client, opts Options, buckets ...Bucket) (*Limiter, error) {
	var durations []time.Duration
	var quotas []quota
	for _, b := range buckets {
		durations = append(durations, b.RefillInterval)
		// The time a bucket takes to fill from empty.
		quotas = append(quotas, quota{b.Capacity, scaleDuration(b.RefillInterval, float64(b.Capacity)/float64(max(b.RefillAmount, 1)))})
	}
	return newLimiter(client, opts, spec{
		script:    TokenBucket,
		durations: durations,
		quotas:    quotas,
		model: func(share float64, u unit) func() model.Model {
			limits := make([]model.TokenBucketLimit, len(buckets))
			for i, b := range buckets {
				amount, interval := fallback.ScaleRate(b.RefillAmount, u.Count(b.RefillInterval), share)
				limits[i] = model.TokenBucketLimit{Capacity: fallback.ScaleMax(b.Capacity, share), RefillAmount: amount, RefillInterval: interval}
			}
			// Reserves: the fallback holds reservations as the script does.
			return func() model.Model { return &model.TokenBucket{Limits: limits, Reserves: true} }
		},
		args: func(u unit) ([]string, error) {
			return limitArgs(buckets, func(c *check, b Bucket) []string {
				args := []string{
					c.count("Capacity", b.Capacity, 1, 1e9),
					c.count("RefillAmount", b.RefillAmount, 1, 1e9),
					c.duration("RefillInterval", b.RefillInterval, u),
				}
				if c.err == nil && float64(b.Capacity)*float64(u.Count(b.RefillInterval)) > 1<<50 {
					c.fail("RefillInterval", "times Capacity must be at most 2^50 %s, got %d * %v", u.Name, b.Capacity, b.RefillInterval)
				}
				return args
			})
		},
	})
}
