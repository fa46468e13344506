//go:build tools

// Package reference compares ratelua-rls with envoyproxy/ratelimit, the
// service it replaces: its tests build both commands (pinned here, so that
// go.mod holds them; the build tag keeps this file out of every build) and
// run them side by side on real servers. Run them with GOWORK=off
// (make test-rls does): this module replaces the tree's modules in its
// go.mod, and go would otherwise take ../go.work, ratelua-rls's, which
// does not list it.
package reference

import (
	_ "github.com/envoyproxy/ratelimit/src/service_cmd"
	_ "github.com/ratelua/ratelua/rls/cmd/ratelua-rls"
)
