// Package service is ratelua-rls's ShouldRateLimit
// (envoy.service.ratelimit.v3.RateLimitService).
//
// A Service matches each descriptor of a request to its rule in the
// configuration in use (SetConfig swaps it under running requests) and
// decides every descriptor through ratelua.Decide, in one round trip per
// node, each with its limiter's options (fallback, fail-open, an extension
// rule's deny cache). A reference rule is the reference's fixed window, its
// deny cache exact (denyCache); the response is the reference's, with its
// headers, quota mode and dynamic metadata, and the statistics go to a
// stats.Recorder.
package service
