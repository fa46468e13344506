package settings

import (
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratelua/ratelua/rls/statsink"
)

// Settings are the service's settings, read from the environment variables
// of envoyproxy/ratelimit (the same names and defaults) and ratelua's own
// (RATELUA_*).
type Settings struct {
	Host, GRPCHost string
	Port, GRPCPort int
	GRPCUDS        string
	// DebugHost and DebugPort are the debug listener's (DEBUG_HOST,
	// DEBUG_PORT): /rlconfig, /debug/pprof/, /stats.
	DebugHost string
	DebugPort int

	// ConfigType (CONFIG_TYPE) is where the configuration comes from:
	// FILE, the files of ConfigDir, or GRPC_XDS_SOTW, an xDS server (XDS).
	ConfigType string
	// ForceStart (FORCE_START_WITHOUT_INITIAL_CONFIG) serves at once with
	// GRPC_XDS_SOTW, instead of after the first update from the server.
	ForceStart bool
	// Tracing are the OpenTelemetry tracing settings (TRACING_*).
	Tracing TracingSettings
	// GRPCTLS are the gRPC server's TLS settings (GRPC_SERVER_USE_TLS...).
	GRPCTLS GRPCTLSSettings
	// XDS are the xDS client's settings (CONFIG_GRPC_XDS_*, XDS_CLIENT_*).
	XDS XDSSettings

	RuntimeRoot, RuntimeSubdirectory, RuntimeAppDirectory string
	RuntimeIgnoreDotFiles, RuntimeWatchRoot               bool
	MergeDomains                                          bool

	RedisSocketType, RedisType, RedisURL, RedisAuth string
	// RedisSentinelAuth (REDIS_SENTINEL_AUTH) is the sentinels' password
	// or user:password with REDIS_TYPE=SENTINEL.
	RedisSentinelAuth string
	// PerSecond (REDIS_PERSECOND=true, REDIS_PERSECOND_*) is a second
	// deployment for the limits whose unit is a second; nil: none.
	PerSecond                                       *RedisTarget
	RedisTLS, RedisTLSSkipVerify                    bool
	RedisTLSCACert, RedisTLSClientCert, RedisTLSKey string

	ShadowMode bool
	// QuotaMode (QUOTA_MODE) puts every rule in quota mode: over its
	// limit, a descriptor is OK and never denies.
	QuotaMode bool
	// DynamicMetadata (RESPONSE_DYNAMIC_METADATA) adds the reference's
	// dynamic_metadata to every response.
	DynamicMetadata                           bool
	ResponseHeaders                           bool
	LimitHeader, RemainingHeader, ResetHeader string
	NearLimitRatio                            float64
	CacheKeyPrefix                            string
	// StopIncrement (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT) counts a
	// request's hits only on the reference rules that go over their
	// limits, when one does.
	StopIncrement     bool
	HealthyWithConfig bool

	// Stats is where the statistics are exported (USE_STATSD,
	// USE_DOG_STATSD, USE_PROMETHEUS, DISABLE_STATS, EXTRA_TAGS,
	// STATS_FLUSH_INTERVAL...), read as the reference reads them.
	Stats statsink.Config

	// MetricsExporter is OTEL_METRICS_EXPORTER: "none" or "otlp" (the
	// statistics per rule as OpenTelemetry metrics, see stats.NewMeterProvider).
	MetricsExporter string

	// LogLevel (LOG_LEVEL) and LogFormat (LOG_FORMAT: text or json) are
	// the command's logging.
	LogLevel  slog.Level
	LogFormat string
	// MaxConnectionAge and MaxConnectionAgeGrace are the gRPC server's
	// (GRPC_MAX_CONNECTION_AGE, GRPC_MAX_CONNECTION_AGE_GRACE).
	MaxConnectionAge, MaxConnectionAgeGrace time.Duration

	// Unused are the settings given that ratelua-rls does not use: the
	// command logs each once at the start.
	Unused []UnusedSetting

	// LocalCacheBytes (LOCAL_CACHE_SIZE_IN_BYTES), above 0, is the size of
	// the reference's local cache of the keys over their limit; see
	// LocalCacheEntries.
	LocalCacheBytes int

	// ratelua's own.
	IETFHeaders bool
	DenyCache   int
	Fallback    float64
	FailOpen    bool
	// ShareCounters (RATELUA_SHARE_REFERENCE_COUNTERS, on by default)
	// decides reference rules on envoyproxy/ratelimit's own counters.
	ShareCounters  bool
	ReloadInterval time.Duration
	MaxDescriptors int
	// RequestTimeout (RATELUA_REQUEST_TIMEOUT, 2 s) bounds a request
	// whose caller set no deadline (/json, a gRPC call without one).
	RequestTimeout time.Duration
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

// UnusedSetting is a setting given that ratelua-rls does not use.
type UnusedSetting struct {
	Name, Value, Why string
}
