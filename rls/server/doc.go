// Package server runs ratelua-rls: the gRPC API and the HTTP endpoints
// (/healthcheck, /health.json, /json, /stats), the Redis or Valkey client
// of the settings, the configuration directory polled and reloaded (the
// last good configuration kept), and the graceful stop. Check validates a
// configuration directory as a server of the same settings would load it.
package server
