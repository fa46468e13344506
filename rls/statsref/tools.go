//go:build tools

// Package statsref compares the statistics ratelua-rls exports with those
// of envoyproxy/ratelimit, the service it replaces: its tests build both
// commands (pinned here, so that go.mod holds them; the build tag keeps
// this file out of every build), run them side by side on real servers
// with the same settings, send both the same requests, and compare what
// each sends to a statsd or dogstatsd listener of the test and what each
// Prometheus endpoint serves. make test-rls runs them with GOWORK=off, on
// the module graph of go.mod (which replaces the tree's modules by their
// folders); go.work lets a plain go command run here too (see its
// comment). It is a module of its own, beside rls/reference (the answers'
// comparison), with the same graph.
package statsref

import (
	_ "github.com/envoyproxy/ratelimit/src/service_cmd"
	_ "github.com/ratelua/ratelua/rls/cmd/ratelua-rls"
)
