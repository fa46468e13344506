// Command ratelua-rls is a rate-limit service for Envoy that reads
// envoyproxy/ratelimit's configuration and environment variables and
// decides with ratelua's limiters.
//
//	ratelua-rls                  serve (settings from the environment)
//	ratelua-rls check CONFIG_DIR validate a configuration directory: every
//	                             error with its file and line; exit 1 on any
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/server"
	"github.com/ratelua/ratelua/rls/settings"
	"github.com/ratelua/ratelua/rls/stats"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return check(args[1:], getenv, stdout, stderr)
		case "-h", "-help", "--help", "help":
			fmt.Fprintln(stdout, "usage: ratelua-rls            serve (settings from the environment)\n       ratelua-rls check DIR  validate the configuration files under DIR")
			return 0
		}
		fmt.Fprintf(stderr, "ratelua-rls: unknown command %q (want no argument, or check DIR)\n", args[0])
		return 2
	}
	s, err := settings.FromEnv(getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: s.LogLevel})
	if s.LogFormat == "json" {
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: s.LogLevel})
	}
	log := slog.New(handler)
	for _, u := range s.Unused {
		log.Warn("setting not used", "name", u.Name, "value", u.Value, "why", u.Why)
	}
	client, err := server.NewClient(s)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer client.Close()
	clients := server.Clients{Main: ratelua.Rueidis(client)}
	if s.PerSecond != nil {
		perSecond, err := server.NewTargetClient(s, *s.PerSecond)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer perSecond.Close()
		clients.PerSecond = ratelua.Rueidis(perSecond)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	meters, err := stats.NewMeterProvider(ctx, s)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var mp metric.MeterProvider
	if meters != nil {
		mp = meters
	}
	srv, err := server.NewOn(s, clients, log, mp)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	code := 0
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintln(stderr, err)
		code = 1
	}
	if meters != nil {
		// Send what was counted since the last export.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := meters.Shutdown(sctx); err != nil {
			log.Error("metrics not exported at shutdown", "error", err)
		}
	}
	return code
}

func check(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: ratelua-rls check CONFIG_DIR")
		return 2
	}
	// The settings as the server reads them: what they change in loading
	// (RUNTIME_IGNOREDOTFILES, MERGE_DOMAIN_CONFIG, RATELUA_FALLBACK) is
	// checked too, and a bad one is named.
	s, err := settings.FromEnv(getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	c, err := server.Check(args[0], s)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d rules, OK\n", args[0], len(c.Rules))
	return 0
}
