// Package stats is ratelua-rls's statistics per rule, named and counted as
// envoyproxy/ratelimit's (total_hits, over_limit, near_limit,
// within_limit, shadow_mode, over_limit_with_local_cache), and the
// service's (configuration loads, requests refused, backend errors,
// global shadow mode, unknown domains), in memory (Snapshot, /stats), as
// OpenTelemetry counters, and exported (Export) to a statsink.Store:
// statsd, dogstatsd or Prometheus, under the reference's names.
//
// The service sees them only through Recorder.
package stats
