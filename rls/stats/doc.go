// Package stats is ratelua-rls's statistics per rule, named and counted as
// envoyproxy/ratelimit's (total_hits, over_limit, near_limit,
// within_limit, shadow_mode, over_limit_with_local_cache), in memory
// (Snapshot, /stats) and as OpenTelemetry counters.
//
// The service sees them only through Recorder; an exporter (statsd,
// Prometheus) is added here, behind Stats, without touching the service.
package stats
