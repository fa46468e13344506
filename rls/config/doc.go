// Package config is ratelua-rls's configuration: envoyproxy/ratelimit's
// YAML files, with ratelua's extension fields (algorithm, resolution,
// limits, duration, burst) in rate_limit.
//
// ReadDir reads a directory as the reference's runtime loader does, Parse
// builds the rules within bounds (file size, alias expansion, descriptors,
// depth) and reports every error with its file and line, a Loader loads the
// directory again when its files change, and Config.Lookup matches a
// descriptor to its rule as the reference does. A Config is immutable once
// parsed.
package config
