//go:build tools

// Package reference compares ratelua-rls with envoyproxy/ratelimit, the
// service it replaces: its tests build both commands (pinned here, so that
// go.mod holds them; the build tag keeps this file out of every build) and
// run them side by side on real servers.
package reference

import (
	_ "github.com/envoyproxy/ratelimit/src/service_cmd"
	_ "github.com/ratelua/ratelua/rls/cmd/ratelua-rls"
)
