// Package rls is ratelua-rls: a rate-limit service for Envoy
// (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) that reads
// envoyproxy/ratelimit's configuration files and environment variables and
// gives its answers, decided by ratelua's limiters.
//
// A rule of the reference's YAML (one limit of requests_per_unit per unit,
// any uint32) is a fixed window aligned to the unit: ratelua's fixed_window
// script, counting every attempt as the reference does, on the reference's
// own counter or on ratelua-rls's own. Optional fields the reference does
// not know (and refuses) add several limits to a rule, decided atomically in
// one script call, give a limit any window length (duration) or a
// token-bucket burst apart from its rate (burst), and choose the algorithm:
// sliding_window with a resolution, token_bucket, zset_log or ar1. See
// README.md.
//
// The service is split as envoyproxy/ratelimit's src/ is:
//
//   - [github.com/ratelua/ratelua/rls/config]: the configuration files:
//     reading a directory, parsing within bounds, reloading when the files
//     change, and matching a descriptor to its rule;
//   - [github.com/ratelua/ratelua/rls/settings]: the environment
//     variables, as a table of every setting (name, default, parser; what
//     ratelua-rls does with it);
//   - [github.com/ratelua/ratelua/rls/service]: ShouldRateLimit, deciding
//     the descriptors of a request through [github.com/ratelua/ratelua.Decide]
//     in one round trip per node, with the deny cache, the fallback and
//     fail-open, and the response's headers and metadata;
//   - [github.com/ratelua/ratelua/rls/stats]: the reference's statistics
//     per rule and the service's, in memory and as OpenTelemetry counters,
//     exported through statsink, behind the interface the service calls;
//   - [github.com/ratelua/ratelua/rls/statsink]: statsd, dogstatsd and a
//     Prometheus endpoint with the reference's names, wire format and
//     flush, depending on nothing of the service;
//   - [github.com/ratelua/ratelua/rls/server]: the gRPC and HTTP
//     listeners, health, the Redis or Valkey client and the reload loop
//     (or the xDS subscription): what the command ratelua-rls runs;
//   - [github.com/ratelua/ratelua/rls/xds]: the xDS client of
//     CONFIG_TYPE=GRPC_XDS_SOTW, RateLimitConfig resources handed on as
//     configuration documents; it imports nothing of the service.
//
// This package holds only this documentation.
package rls
