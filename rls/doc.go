// Package rls is ratelua-rls: a rate-limit service for Envoy
// (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) that reads
// envoyproxy/ratelimit's configuration files and environment variables and
// gives its answers, decided by ratelua's limiters.
//
// A rule of the reference's YAML (one limit of requests_per_unit per unit)
// is a fixed window aligned to the unit: a ratelua sliding window with one
// bucket of the unit, counting every attempt as the reference does. Optional
// fields the reference does not know (and refuses) add several limits to a
// rule, decided atomically in one script call, and choose the algorithm:
// sliding_window with a resolution, token_bucket, zset_log or ar1. See
// README.md.
//
// The descriptors of one request are decided in one round trip per node,
// with the limiters' deny cache, fallback and fail-open too. Stats counts
// the reference's statistics per rule, in memory and as OpenTelemetry
// counters.
package rls
