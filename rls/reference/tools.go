//go:build tools

// Package reference pins envoyproxy/ratelimit, the service the comparison
// tests build and run beside ratelua-rls; the build tag keeps it out of
// every build.
package reference

import _ "github.com/envoyproxy/ratelimit/src/service_cmd"
