//go:build tools

// Package reference compares ratelua-rls with envoyproxy/ratelimit, the
// service it replaces: its tests build both commands (pinned here, so that
// go.mod holds them; the build tag keeps this file out of every build) and
// run them side by side on real servers. make test-rls runs them with
// GOWORK=off, on the module graph of go.mod (which replaces the tree's
// modules by their folders); go.work lets a plain go command run here
// too (see its comment).
package reference

import (
	_ "github.com/envoyproxy/ratelimit/src/service_cmd"
	_ "github.com/ratelua/ratelua/rls/cmd/ratelua-rls"
)
