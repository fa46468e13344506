// Package xds subscribes to rate-limit configuration over xDS, as
// envoyproxy/ratelimit does with CONFIG_TYPE=GRPC_XDS_SOTW: a
// state-of-the-world stream of the aggregated discovery service (ADS) for
// RateLimitConfig resources (ratelimit.config.ratelimit.v3), the resource
// Envoy Gateway and Envoy AI Gateway push to their rate-limit service.
//
// Each complete update is handed to a callback as the reference's YAML
// configuration documents (domain and descriptors), one per resource: the
// bytes a configuration file would hold, so that the file loader validates
// them. The callback's answer is the subscription's: nil accepts the
// update (ACK), an error refuses it (NACK, with the error as the detail),
// and the caller keeps its last good configuration. A stream that breaks
// is opened again after a backoff; everything stops with the context.
//
// The package depends on nothing of the service that uses it.
package xds
