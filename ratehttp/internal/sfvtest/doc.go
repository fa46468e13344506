// Package sfvtest checks that every header field ratehttp sends parses as
// an RFC 9651 structured field with the parameters of
// draft-ietf-httpapi-ratelimit-headers-11, with a parser written by others
// (github.com/dunglas/httpsfv) rather than by string comparison.
//
// It is a module of its own so that the parser, a test-only dependency,
// stays out of ratelua's go.mod; it holds tests only.
package sfvtest
