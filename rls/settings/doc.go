// Package settings is ratelua-rls's environment: envoyproxy/ratelimit's
// variables, with their names and defaults, and ratelua-rls's own
// (RATELUA_*, OTEL_*).
//
// Table lists every variable once, with its default, the parser of its
// value and what ratelua-rls does with it: implemented, refused (a value
// that would turn on what is not built stops the start, naming the
// variable), unused (accepted and logged once) or own. FromEnv reads the
// Settings by that table.
package settings
