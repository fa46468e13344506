package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/service"
	"github.com/ratelua/ratelua/rls/settings"
	"github.com/ratelua/ratelua/rls/stats"
	"github.com/ratelua/ratelua/rls/statsink"
	"github.com/ratelua/ratelua/rls/tracing"
)

// Server is a running ratelua-rls: the gRPC API, the HTTP endpoints and
// the configuration reloads.
type Server struct {
	settings settings.Settings
	log      *slog.Logger
	service  *service.Service
	stats    *stats.Stats
	loader   *config.Loader

	reloading sync.Mutex // held by Reload

	mu        sync.Mutex
	loadedAt  time.Time
	lastError error
	errorAt   time.Time
	stopping  bool
}

// New returns a server on client, logging to log, its statistics also
// counted on meters if not nil.
func New(s settings.Settings, client ratelua.Client, log *slog.Logger, meters metric.MeterProvider) (*Server, error) {
	return NewOn(s, Clients{Main: client}, log, meters)
}

// Clients are the deployments a server decides on.
type Clients struct {
	// Main is REDIS_URL's deployment.
	Main ratelua.Client
	// PerSecond, if not nil, is REDIS_PERSECOND_URL's, for the limits
	// whose unit is a second.
	PerSecond ratelua.Client
}

// NewOn returns a server on clients, as New.
func NewOn(s settings.Settings, clients Clients, log *slog.Logger, meters metric.MeterProvider) (*Server, error) {
	client := clients.Main
	counters, err := stats.New(s.NearLimitRatio, meters)
	if err != nil {
		return nil, err
	}
	opts := service.Options{
		Client: client, Prefix: s.Prefix(), ShadowMode: s.ShadowMode, QuotaMode: s.QuotaMode,
		DynamicMetadata: s.DynamicMetadata, IETFHeaders: s.IETFHeaders,
		DenyCache: s.DenyCache, LocalCache: s.LocalCacheEntries(), Fallback: s.Fallback, FailOpen: s.FailOpen, Stats: counters,
		MaxDescriptors: s.MaxDescriptors, RequestTimeout: s.RequestTimeout,
		ShareReferenceCounters: s.ShareCounters, ReferencePrefix: s.CacheKeyPrefix,
	}
	if s.ResponseHeaders {
		opts.LimitHeader, opts.RemainingHeader, opts.ResetHeader = s.LimitHeader, s.RemainingHeader, s.ResetHeader
	}
	opts.StopIncrementWhenOverLimit = s.StopIncrement
	opts.PerSecondClient = clients.PerSecond
	svc, err := service.New(opts)
	if err != nil {
		return nil, err
	}
	loader := &config.Loader{Dir: s.ConfigDir(), IgnoreDotFiles: s.RuntimeIgnoreDotFiles, Parse: config.ParseOptions{MergeDomains: s.MergeDomains}}
	return &Server{settings: s, log: log, service: svc, stats: counters, loader: loader}, nil
}

// Service returns the server's Service.
func (s *Server) Service() *service.Service { return s.service }

// Run serves until ctx is done (SIGTERM in the command), then stops
// gracefully: health fails, in-flight requests finish, listeners close,
// and the statistics are flushed a last time.
func (s *Server) Run(ctx context.Context) error {
	cfg := s.settings.Stats
	cfg.Log = s.log
	exp, err := statsink.Start(cfg)
	if err != nil {
		return fmt.Errorf("rls: statistics: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := exp.Close(sctx); err != nil {
			s.log.Warn("statistics not flushed at shutdown", "error", err)
		}
	}()
	if exp.Store != nil {
		exp.Store.AddRuntimeStats(stats.RuntimePrefix)
		s.stats.Export(exp.Store)
		s.log.Info("exporting statistics", "sink", exp.Kind, "flush_interval", cfg.FlushInterval)
	}
	var reload <-chan time.Time
	if s.settings.ConfigType == settings.ConfigXDS {
		stop, err := s.startXDS(ctx)
		if err != nil {
			if ctx.Err() != nil {
				s.log.Info("stopped before the first xDS configuration")
				return nil
			}
			return err
		}
		defer stop()
	} else {
		if err := s.Reload(true); err != nil && errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("configuration directory missing; every domain is unknown until it appears", "dir", s.settings.ConfigDir())
		}
		tick := time.NewTicker(s.settings.ReloadInterval)
		defer tick.Stop()
		reload = tick.C
	}
	var grpcLn net.Listener
	if s.settings.GRPCUDS != "" {
		_ = os.Remove(s.settings.GRPCUDS)
		grpcLn, err = net.Listen("unix", s.settings.GRPCUDS)
	} else {
		grpcLn, err = net.Listen("tcp", net.JoinHostPort(s.settings.GRPCHost, strconv.Itoa(s.settings.GRPCPort)))
	}
	if err != nil {
		return fmt.Errorf("rls: gRPC listener: %w", err)
	}
	httpLn, err := net.Listen("tcp", net.JoinHostPort(s.settings.Host, strconv.Itoa(s.settings.Port)))
	if err != nil {
		grpcLn.Close()
		return fmt.Errorf("rls: HTTP listener: %w", err)
	}
	gopts := []grpc.ServerOption{grpc.KeepaliveParams(keepalive.ServerParameters{
		MaxConnectionAge: s.settings.MaxConnectionAge, MaxConnectionAgeGrace: s.settings.MaxConnectionAgeGrace,
	})}
	var interceptors []grpc.UnaryServerInterceptor
	if s.settings.Tracing.Enabled {
		tp, err := tracing.Start(ctx, s.settings.Tracing)
		if err != nil {
			grpcLn.Close()
			httpLn.Close()
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				s.log.Warn("spans not flushed at shutdown", "error", err)
			}
		}()
		interceptors = append(interceptors, tracing.UnaryServerInterceptor(tp))
	}
	if exp.Store != nil {
		interceptors = append(interceptors, stats.UnaryServerInterceptor(exp.Store))
	}
	if len(interceptors) > 0 {
		gopts = append(gopts, grpc.ChainUnaryInterceptor(interceptors...))
	}
	if s.settings.GRPCTLS.UseTLS {
		tc, err := s.settings.GRPCTLS.Config()
		if err != nil {
			grpcLn.Close()
			httpLn.Close()
			return fmt.Errorf("rls: gRPC TLS: %w", err)
		}
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(tc)))
	}
	gs := grpc.NewServer(gopts...)
	pb.RegisterRateLimitServiceServer(gs, s.service)
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.log.Info("serving", "grpc", grpcLn.Addr().String(), "http", httpLn.Addr().String())
	if debugLn := s.listenDebug(); debugLn != nil {
		ds := &http.Server{Handler: s.DebugHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = ds.Serve(debugLn) }()
		defer ds.Close()
		s.log.Info("debug listener", "addr", debugLn.Addr().String())
	}

	errc := make(chan error, 2)
	go func() { errc <- gs.Serve(grpcLn) }()
	go func() { errc <- hs.Serve(httpLn) }()
	for {
		select {
		case <-reload:
			_ = s.Reload(false)
			continue
		case err = <-errc:
		case <-ctx.Done():
		}
		break
	}
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		gs.Stop()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	s.log.Info("stopped")
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("rls: serving: %w", err)
	}
	return nil
}
