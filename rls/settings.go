package rls

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Settings are the service's settings, read from the environment variables
// of envoyproxy/ratelimit (the same names and defaults) and ratelua's own
// (RATELUA_*).
type Settings struct {
	Host, GRPCHost string
	Port, GRPCPort int
	GRPCUDS        string

	RuntimeRoot, RuntimeSubdirectory, RuntimeAppDirectory string
	RuntimeIgnoreDotFiles, RuntimeWatchRoot               bool
	MergeDomains                                          bool

	RedisSocketType, RedisType, RedisURL, RedisAuth string
	RedisTLS, RedisTLSSkipVerify                    bool
	RedisTLSCACert, RedisTLSClientCert, RedisTLSKey string

	ShadowMode                                bool
	ResponseHeaders                           bool
	LimitHeader, RemainingHeader, ResetHeader string
	NearLimitRatio                            float64
	CacheKeyPrefix                            string
	HealthyWithConfig                         bool

	// MetricsExporter is OTEL_METRICS_EXPORTER: "none" or "otlp" (the
	// statistics per rule as OpenTelemetry metrics, see NewMeterProvider).
	MetricsExporter string

	// ratelua's own.
	IETFHeaders    bool
	DenyCache      int
	Fallback       float64
	FailOpen       bool
	ReloadInterval time.Duration
	MaxDescriptors int
	// RequestTimeout (RATELUA_REQUEST_TIMEOUT, 2 s) bounds a request
	// whose caller set no deadline (/json, a gRPC call without one).
	RequestTimeout time.Duration
}

// SettingsFromEnv reads the settings from getenv (os.Getenv in the
// command). Every
// value that does not parse, and every reference feature ratelua-rls does
// not have, is an error naming the variable.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	r := envReader{getenv: getenv}
	s := Settings{
		Host:                  r.str("HOST", "0.0.0.0"),
		Port:                  r.int("PORT", 8080),
		GRPCHost:              r.str("GRPC_HOST", "0.0.0.0"),
		GRPCPort:              r.int("GRPC_PORT", 8081),
		GRPCUDS:               r.str("GRPC_UDS", ""),
		RuntimeRoot:           r.str("RUNTIME_ROOT", "/srv/runtime_data/current"),
		RuntimeSubdirectory:   r.str("RUNTIME_SUBDIRECTORY", ""),
		RuntimeAppDirectory:   r.str("RUNTIME_APPDIRECTORY", "config"),
		RuntimeIgnoreDotFiles: r.bool("RUNTIME_IGNOREDOTFILES", false),
		RuntimeWatchRoot:      r.bool("RUNTIME_WATCH_ROOT", true),
		MergeDomains:          r.bool("MERGE_DOMAIN_CONFIG", false),
		RedisSocketType:       strings.ToLower(r.str("REDIS_SOCKET_TYPE", "unix")),
		RedisType:             strings.ToUpper(r.str("REDIS_TYPE", "SINGLE")),
		RedisURL:              r.str("REDIS_URL", "/var/run/nutcracker/ratelimit.sock"),
		RedisAuth:             r.str("REDIS_AUTH", ""),
		RedisTLS:              r.bool("REDIS_TLS", false),
		RedisTLSSkipVerify:    r.bool("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", false),
		RedisTLSCACert:        r.str("REDIS_TLS_CACERT", ""),
		RedisTLSClientCert:    r.str("REDIS_TLS_CLIENT_CERT", ""),
		RedisTLSKey:           r.str("REDIS_TLS_CLIENT_KEY", ""),
		ShadowMode:            r.bool("SHADOW_MODE", false),
		ResponseHeaders:       r.bool("LIMIT_RESPONSE_HEADERS_ENABLED", false),
		LimitHeader:           r.str("LIMIT_LIMIT_HEADER", "RateLimit-Limit"),
		RemainingHeader:       r.str("LIMIT_REMAINING_HEADER", "RateLimit-Remaining"),
		ResetHeader:           r.str("LIMIT_RESET_HEADER", "RateLimit-Reset"),
		NearLimitRatio:        r.float("NEAR_LIMIT_RATIO", 0.8),
		CacheKeyPrefix:        r.str("CACHE_KEY_PREFIX", ""),
		HealthyWithConfig:     r.bool("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", false),
		MetricsExporter:       strings.ToLower(r.str("OTEL_METRICS_EXPORTER", "none")),
		IETFHeaders:           r.bool("RATELUA_IETF_HEADERS", false),
		DenyCache:             r.int("RATELUA_DENY_CACHE", 0),
		Fallback:              r.float("RATELUA_FALLBACK", 0),
		FailOpen:              r.bool("RATELUA_FAIL_OPEN", false),
		ReloadInterval:        r.duration("RATELUA_RELOAD_INTERVAL", time.Second),
		MaxDescriptors:        r.int("RATELUA_MAX_DESCRIPTORS", 1000),
		RequestTimeout:        r.duration("RATELUA_REQUEST_TIMEOUT", 2*time.Second),
	}
	if v := r.str("BACKEND_TYPE", "redis"); v != "redis" {
		r.fail("BACKEND_TYPE", v, "ratelua-rls runs on Redis or Valkey only (redis)")
	}
	if v := r.str("CONFIG_TYPE", "FILE"); strings.ToUpper(v) != "FILE" {
		r.fail("CONFIG_TYPE", v, "ratelua-rls reads configuration files only (FILE)")
	}
	if r.bool("REDIS_PERSECOND", false) {
		r.fail("REDIS_PERSECOND", "true", "a second Redis for per-second limits is not built in ratelua-rls: unset it, every limit runs on REDIS_URL")
	}
	if r.bool("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", false) {
		r.fail("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true", "not built in ratelua-rls: use an extension rule (algorithm), which counts admitted hits only")
	}
	if n := r.int("LOCAL_CACHE_SIZE_IN_BYTES", 0); n != 0 {
		r.fail("LOCAL_CACHE_SIZE_IN_BYTES", strconv.Itoa(n), "not built in ratelua-rls: use RATELUA_DENY_CACHE (a number of descriptors), which gives the answers the server would")
	}
	switch s.MetricsExporter {
	case "none", "otlp":
	default:
		r.fail("OTEL_METRICS_EXPORTER", s.MetricsExporter, "must be otlp or none (ratelua-rls exports OTLP over HTTP only)")
	}
	if s.MetricsExporter == "otlp" {
		for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
			if v := r.str(name, "http/protobuf"); v != "http/protobuf" {
				r.fail(name, v, "ratelua-rls exports OTLP over HTTP only (http/protobuf)")
			}
		}
	}
	switch s.RedisSocketType {
	case "unix", "tcp":
	default:
		r.fail("REDIS_SOCKET_TYPE", s.RedisSocketType, "must be unix or tcp")
	}
	switch s.RedisType {
	case "SINGLE", "CLUSTER":
	default:
		r.fail("REDIS_TYPE", s.RedisType, "must be SINGLE or CLUSTER (SENTINEL is not built in ratelua-rls)")
	}
	if strings.ContainsAny(s.CacheKeyPrefix, "{}") {
		r.fail("CACHE_KEY_PREFIX", s.CacheKeyPrefix, "may not contain '{' or '}'")
	}
	for _, p := range []struct {
		name string
		port int
	}{{"PORT", s.Port}, {"GRPC_PORT", s.GRPCPort}} {
		if p.port < 0 || p.port > 65535 {
			r.fail(p.name, strconv.Itoa(p.port), "must be a port from 0 to 65535")
		}
	}
	// Written so that NaN fails every test.
	if !(s.NearLimitRatio > 0 && s.NearLimitRatio <= 1) {
		r.fail("NEAR_LIMIT_RATIO", r.getenv("NEAR_LIMIT_RATIO"), "must be a share above 0 and at most 1, such as 0.8")
	}
	if !(s.Fallback == 0 || s.Fallback >= 0.001 && s.Fallback <= 1) {
		r.fail("RATELUA_FALLBACK", r.getenv("RATELUA_FALLBACK"), "must be 0 (no fallback) or a share from 0.001 to 1, such as 0.5")
	}
	if s.DenyCache < 0 {
		r.fail("RATELUA_DENY_CACHE", strconv.Itoa(s.DenyCache), "must be 0 (no deny cache) or a number of descriptors above 0")
	}
	if s.MetricsExporter == "otlp" {
		if v := r.getenv("OTEL_METRIC_EXPORT_INTERVAL"); v != "" {
			if ms, err := strconv.ParseInt(v, 10, 64); err != nil || ms <= 0 {
				r.fail("OTEL_METRIC_EXPORT_INTERVAL", v, "must be a number of milliseconds above 0")
			}
		}
	}
	if s.ReloadInterval <= 0 {
		r.fail("RATELUA_RELOAD_INTERVAL", s.ReloadInterval.String(), "must be above 0")
	}
	if s.RequestTimeout <= 0 {
		r.fail("RATELUA_REQUEST_TIMEOUT", s.RequestTimeout.String(), "must be above 0")
	}
	if s.MaxDescriptors <= 0 {
		r.fail("RATELUA_MAX_DESCRIPTORS", strconv.Itoa(s.MaxDescriptors), "must be above 0")
	}
	if r.err != nil {
		return s, r.err
	}
	return s, nil
}

// ConfigDir is the directory whose files are the configuration:
// RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY.
func (s Settings) ConfigDir() string {
	return filepath.Join(s.RuntimeRoot, s.RuntimeSubdirectory, s.RuntimeAppDirectory)
}

// Prefix is the limiters' key prefix: "rls", after CACHE_KEY_PREFIX.
func (s Settings) Prefix() string {
	if s.CacheKeyPrefix == "" {
		return "rls"
	}
	return strings.TrimSuffix(s.CacheKeyPrefix, ":") + ":rls"
}

// envReader reads typed variables, remembering the first error.
type envReader struct {
	getenv func(string) string
	err    error
}

func (r *envReader) fail(name, value, why string) {
	if r.err == nil {
		r.err = fmt.Errorf("rls: %s=%q: %s", name, value, why)
	}
}

func (r *envReader) str(name, def string) string {
	if v := r.getenv(name); v != "" {
		return v
	}
	return def
}

func (r *envReader) int(name string, def int) int {
	v := r.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(name, v, "not an integer")
	}
	return n
}

func (r *envReader) bool(name string, def bool) bool {
	v := r.getenv(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, v, "not true or false")
	}
	return b
}

func (r *envReader) float(name string, def float64) float64 {
	v := r.getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		r.fail(name, v, "not a number")
	}
	return f
}

func (r *envReader) duration(name string, def time.Duration) time.Duration {
	v := r.getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(name, v, "not a duration such as 1s")
	}
	return d
}
