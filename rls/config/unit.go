package config

import (
	"fmt"
	"strings"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// UnitDuration is the length of a unit, as the reference divides time (0
// for UNKNOWN or a unit the reference does not know).
func UnitDuration(u pb.RateLimitResponse_RateLimit_Unit) time.Duration {
	const day = 24 * time.Hour
	switch u {
	case pb.RateLimitResponse_RateLimit_SECOND:
		return time.Second
	case pb.RateLimitResponse_RateLimit_MINUTE:
		return time.Minute
	case pb.RateLimitResponse_RateLimit_HOUR:
		return time.Hour
	case pb.RateLimitResponse_RateLimit_DAY:
		return day
	case pb.RateLimitResponse_RateLimit_WEEK:
		return 7 * day
	case pb.RateLimitResponse_RateLimit_MONTH:
		return 30 * day
	case pb.RateLimitResponse_RateLimit_YEAR:
		return 365 * day
	}
	return 0
}

// parseUnit reads a unit name as the reference does (any case).
func parseUnit(s string) (pb.RateLimitResponse_RateLimit_Unit, error) {
	v, ok := pb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(s)]
	if !ok || v == int32(pb.RateLimitResponse_RateLimit_UNKNOWN) || UnitDuration(pb.RateLimitResponse_RateLimit_Unit(v)) == 0 {
		return 0, fmt.Errorf("invalid rate limit unit '%s'", s)
	}
	return pb.RateLimitResponse_RateLimit_Unit(v), nil
}

// unitOfLength is the unit whose length is d, or UNKNOWN when none is.
func unitOfLength(d time.Duration) pb.RateLimitResponse_RateLimit_Unit {
	for u := range pb.RateLimitResponse_RateLimit_Unit_name {
		if unit := pb.RateLimitResponse_RateLimit_Unit(u); UnitDuration(unit) == d {
			return unit
		}
	}
	return pb.RateLimitResponse_RateLimit_UNKNOWN
}
