package rls

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/statsink"
)

// Server is a running ratelua-rls: the gRPC API, the HTTP endpoints and
// the configuration reloads.
type Server struct {
	settings Settings
	log      *slog.Logger
	service  *Service
	stats    *Stats

	mu         sync.Mutex
	loadedAt   time.Time
	lastError  error
	errorAt    time.Time
	stopping   bool
	fingerprnt string
}

// NewClient connects to the Redis or Valkey of the settings.
func NewClient(s Settings) (rueidis.Client, error) {
	opt := rueidis.ClientOption{InitAddress: strings.Split(s.RedisURL, ","), DisableCache: true}
	if s.RedisType == "SINGLE" {
		opt.ForceSingleClient = true
		opt.InitAddress = opt.InitAddress[:1]
	}
	if s.RedisSocketType == "unix" {
		path := s.RedisURL
		opt.InitAddress = []string{path}
		opt.DialCtxFn = func(ctx context.Context, _ string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}
	}
	if s.RedisAuth != "" {
		if user, pass, ok := strings.Cut(s.RedisAuth, ":"); ok {
			opt.Username, opt.Password = user, pass
		} else {
			opt.Password = s.RedisAuth
		}
	}
	if s.RedisTLS {
		cfg := &tls.Config{InsecureSkipVerify: s.RedisTLSSkipVerify, MinVersion: tls.VersionTLS12}
		if s.RedisTLSCACert != "" {
			pem, err := os.ReadFile(s.RedisTLSCACert)
			if err != nil {
				return nil, fmt.Errorf("rls: REDIS_TLS_CACERT: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("rls: REDIS_TLS_CACERT %s holds no PEM certificate", s.RedisTLSCACert)
			}
			cfg.RootCAs = pool
		}
		if s.RedisTLSClientCert != "" {
			cert, err := tls.LoadX509KeyPair(s.RedisTLSClientCert, s.RedisTLSKey)
			if err != nil {
				return nil, fmt.Errorf("rls: REDIS_TLS_CLIENT_CERT/KEY: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opt.TLSConfig = cfg
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		if s.RedisTLS {
			return nil, explainTLS(context.Background(), s, opt.InitAddress[0], err)
		}
		return nil, fmt.Errorf("rls: connecting to %s: %w", s.RedisURL, err)
	}
	return c, nil
}

// NewServer returns a server on client, logging to log, its statistics
// also counted on meters if not nil.
func NewServer(s Settings, client ratelua.Client, log *slog.Logger, meters metric.MeterProvider) (*Server, error) {
	stats, err := NewStats(s.NearLimitRatio, meters)
	if err != nil {
		return nil, err
	}
	opts := Options{
		Client: client, Prefix: s.Prefix(), ShadowMode: s.ShadowMode, QuotaMode: s.QuotaMode,
		DynamicMetadata: s.DynamicMetadata, IETFHeaders: s.IETFHeaders,
		DenyCache: s.DenyCache, Fallback: s.Fallback, FailOpen: s.FailOpen, Stats: stats,
		MaxDescriptors: s.MaxDescriptors, RequestTimeout: s.RequestTimeout,
	}
	if s.ResponseHeaders {
		opts.LimitHeader, opts.RemainingHeader, opts.ResetHeader = s.LimitHeader, s.RemainingHeader, s.ResetHeader
	}
	svc := NewService(opts)
	if svc.refErr != nil {
		return nil, svc.refErr
	}
	return &Server{settings: s, log: log, service: svc, stats: stats}, nil
}

// Service returns the server's Service.
func (s *Server) Service() *Service { return s.service }

// Reload loads the configuration directory when its files changed (or
// force). A configuration that fails to load is logged and kept on the
// health endpoint; the last good one stays in use.
func (s *Server) Reload(force bool) error {
	dir := s.settings.ConfigDir()
	files, err := ReadDir(dir, s.settings.RuntimeIgnoreDotFiles)
	var fp string
	if err == nil {
		fp = fingerprint(files)
		s.mu.Lock()
		same := fp == s.fingerprnt
		s.mu.Unlock()
		if same && !force {
			return nil
		}
		var c *Config
		c, err = Parse(files, ParseOptions{MergeDomains: s.settings.MergeDomains})
		if err == nil {
			err = s.service.SetConfig(c)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fingerprnt = fp
	if err != nil {
		// Counted once per failure: a directory that cannot be read fails
		// every poll.
		if fp != "" || s.lastError == nil || s.lastError.Error() != err.Error() {
			s.service.export.configLoadError.Inc()
		}
		s.lastError, s.errorAt = err, time.Now()
		s.log.Error("configuration not loaded; the last good one stays in use", "dir", dir, "error", err)
		return err
	}
	s.service.export.configLoadSuccess.Inc()
	s.lastError, s.loadedAt = nil, time.Now()
	s.log.Info("configuration loaded", "dir", dir, "files", len(files))
	return nil
}

// fingerprint identifies a set of files by their names and contents.
func fingerprint(files []File) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%d:%s%d:", len(f.Name), f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return string(h.Sum(nil))
}

// Health is the state the health endpoint reports.
type Health struct {
	OK         bool      `json:"ok"`
	Stopping   bool      `json:"stopping,omitempty"`
	LoadedAt   time.Time `json:"config_loaded_at,omitzero"`
	LastError  string    `json:"last_config_error,omitempty"`
	ErrorAt    time.Time `json:"last_config_error_at,omitzero"`
	ConfigUsed bool      `json:"config_in_use"`
}

// Health reports whether the server answers: not stopping, and with a
// configuration when HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED says so.
func (s *Server) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := Health{Stopping: s.stopping, LoadedAt: s.loadedAt, ErrorAt: s.errorAt, ConfigUsed: s.service.Config() != nil}
	if s.lastError != nil {
		h.LastError = s.lastError.Error()
	}
	h.OK = !s.stopping && (h.ConfigUsed || !s.settings.HealthyWithConfig)
	return h
}

// Handler serves the HTTP endpoints: /healthcheck ("OK", or 500 when
// unhealthy; a failed configuration load is reported beneath), /json
// (ShouldRateLimit with a JSON request and response, as the reference's)
// and /stats (the counters per rule, JSON).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthcheck", func(w http.ResponseWriter, _ *http.Request) {
		h := s.Health()
		if !h.OK {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintln(w, "NOT OK")
		} else {
			fmt.Fprintln(w, "OK")
		}
		if h.LastError != "" {
			fmt.Fprintf(w, "last configuration load failed at %s (serving the one loaded at %s):\n%s\n",
				h.ErrorAt.UTC().Format(time.RFC3339), h.LoadedAt.UTC().Format(time.RFC3339), h.LastError)
		}
	})
	mux.HandleFunc("/health.json", func(w http.ResponseWriter, _ *http.Request) {
		h := s.Health()
		w.Header().Set("Content-Type", "application/json")
		if !h.OK {
			w.WriteHeader(http.StatusInternalServerError)
		}
		_ = json.NewEncoder(w).Encode(h)
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req pb.RateLimitRequest
		if err := protojson.Unmarshal(body, &req); err != nil {
			http.Error(w, "error: "+err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := s.service.ShouldRateLimit(r.Context(), &req)
		if err != nil {
			http.Error(w, "error: "+err.Error(), httpStatus(err))
			return
		}
		out, err := protojson.Marshal(resp)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
			w.WriteHeader(http.StatusTooManyRequests)
		}
		_, _ = w.Write(out)
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.stats.Snapshot())
	})
	return mux
}

// httpStatus is the /json status of a ShouldRateLimit error: 400 for a
// request refused, 503 when the backend did not answer (as the gRPC
// status Unavailable), 500 otherwise.
func httpStatus(err error) int {
	switch status.Code(err) {
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

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
		exp.Store.AddRuntimeStats("ratelimit.go")
		s.service.exportTo(exp.Store)
		s.log.Info("exporting statistics", "sink", exp.Kind, "flush_interval", cfg.FlushInterval)
	}
	if err := s.Reload(true); err != nil && errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("configuration directory missing; every domain is unknown until it appears", "dir", s.settings.ConfigDir())
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
	if exp.Store != nil {
		gopts = append(gopts, grpc.UnaryInterceptor(grpcStats(exp.Store)))
	}
	gs := grpc.NewServer(gopts...)
	pb.RegisterRateLimitServiceServer(gs, s.service)
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.log.Info("serving", "grpc", grpcLn.Addr().String(), "http", httpLn.Addr().String())

	errc := make(chan error, 2)
	go func() { errc <- gs.Serve(grpcLn) }()
	go func() { errc <- hs.Serve(httpLn) }()
	tick := time.NewTicker(s.settings.ReloadInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
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

// Check parses the configuration directory dir and returns every error,
// each naming its file and line.
func Check(dir string, ignoreDotFiles, mergeDomains bool) (*Config, error) {
	return CheckSettings(dir, Settings{RuntimeIgnoreDotFiles: ignoreDotFiles, MergeDomains: mergeDomains})
}

// CheckSettings is Check as a server of the settings s would load dir:
// RUNTIME_IGNOREDOTFILES, MERGE_DOMAIN_CONFIG, and the limiters' settings
// (RATELUA_FALLBACK refuses a limit its share rounds down to 0).
func CheckSettings(dir string, s Settings) (*Config, error) {
	files, err := ReadDir(dir, s.RuntimeIgnoreDotFiles)
	if err != nil {
		return nil, err
	}
	c, err := Parse(files, ParseOptions{MergeDomains: s.MergeDomains})
	if err != nil {
		return nil, err
	}
	// The limits must also make limiters (bounds the parser checks too).
	svc := NewService(Options{Client: offline{}, DenyCache: s.DenyCache, Fallback: s.Fallback, FailOpen: s.FailOpen})
	if err := svc.SetConfig(c); err != nil {
		return nil, err
	}
	return c, nil
}

// offline is a Client that never sends: check builds limiters with it.
type offline struct{}

// Run refuses every call.
func (offline) Run(context.Context, ratelua.Call, []int64) error {
	return fmt.Errorf("rls: check does not connect: %w", ratelua.ErrUnavailable)
}
