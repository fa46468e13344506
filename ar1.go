package ratelua

import (
	"math"
	"strconv"
	"time"

	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/model"
)

// Decay is an exponentially decaying count (AR(1)): at every multiple of
// Resolution the count is divided by Factor, and events are admitted while
// count + events <= Max. A count below 1/1000 of an event is 0.
type Decay struct {
	Max int64
	// Factor is > 1 with at most three decimals (2 halves the count each
	// Resolution; 1.1 takes a tenth off).
	Factor     float64
	Resolution time.Duration
}

// NewAR1 returns a limiter over decaying counts (script ar1): per event
// key, one integer with one limit (from v6, the default; a short string
// when the count has a fraction), one short string with several; the
// least memory and work of all.
func NewAR1(client Client, opts Options, decays ...Decay) (*Limiter, error) {
	var durations []time.Duration
	var quotas []quota
	for _, d := range decays {
		durations = append(durations, d.Resolution)
		// An event's mean lifetime in the count: Resolution * sum of
		// Factor^-k = Resolution * Factor / (Factor - 1).
		quotas = append(quotas, quota{d.Max, scaleDuration(d.Resolution, d.Factor/(d.Factor-1))})
	}
	return newLimiter(client, opts, spec{
		script:    AR1,
		durations: durations,
		quotas:    quotas,
		model: func(share float64, u unit) func() model.Model {
			limits := make([]model.AR1Limit, len(decays))
			for i, d := range decays {
				limits[i] = model.AR1Limit{Max: fallback.ScaleMax(d.Max, share), Decay: int64(math.Round(d.Factor * 1000)), Resolution: u.Count(d.Resolution)}
			}
			return func() model.Model { return &model.AR1{Limits: limits} }
		},
		args: func(u unit) ([]string, error) {
			return limitArgs(decays, func(c *check, d Decay) []string {
				permille := math.Round(d.Factor * 1000)
				if math.IsNaN(d.Factor) || permille < 1001 || permille > 1e9 || math.Abs(d.Factor*1000-permille) > 1e-6 {
					c.fail("Factor", "must be in [1.001, 10^6] with at most 3 decimals, got %v", d.Factor)
				}
				return []string{
					c.count("Max", d.Max, 1, 1e9),
					strconv.FormatInt(int64(permille), 10),
					c.duration("Resolution", d.Resolution, u),
				}
			})
		},
	})
}
