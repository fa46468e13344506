package rls

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
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

	RuntimeRoot, RuntimeSubdirectory, RuntimeAppDirectory string
	RuntimeIgnoreDotFiles, RuntimeWatchRoot               bool
	MergeDomains                                          bool

	RedisSocketType, RedisType, RedisURL, RedisAuth string
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
	HealthyWithConfig                         bool

	// Stats is where the statistics are exported (USE_STATSD,
	// USE_DOG_STATSD, USE_PROMETHEUS, DISABLE_STATS, EXTRA_TAGS,
	// STATS_FLUSH_INTERVAL...), read as the reference reads them.
	Stats statsink.Config

	// MetricsExporter is OTEL_METRICS_EXPORTER: "none" or "otlp" (the
	// statistics per rule as OpenTelemetry metrics, see NewMeterProvider).
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
	r := envReader{getenv: getenv, table: map[string]Setting{}, read: map[string]bool{}}
	for _, t := range ReferenceSettings() {
		r.table[t.Name] = t
	}
	s := Settings{
		Host:                  r.str("HOST"),
		Port:                  r.int("PORT"),
		GRPCHost:              r.str("GRPC_HOST"),
		GRPCPort:              r.int("GRPC_PORT"),
		GRPCUDS:               r.str("GRPC_UDS"),
		RuntimeRoot:           r.str("RUNTIME_ROOT"),
		RuntimeSubdirectory:   r.str("RUNTIME_SUBDIRECTORY"),
		RuntimeAppDirectory:   r.str("RUNTIME_APPDIRECTORY"),
		RuntimeIgnoreDotFiles: r.bool("RUNTIME_IGNOREDOTFILES"),
		RuntimeWatchRoot:      r.bool("RUNTIME_WATCH_ROOT"),
		MergeDomains:          r.bool("MERGE_DOMAIN_CONFIG"),
		RedisSocketType:       strings.ToLower(r.str("REDIS_SOCKET_TYPE")),
		RedisType:             strings.ToUpper(r.str("REDIS_TYPE")),
		RedisURL:              r.str("REDIS_URL"),
		RedisAuth:             r.str("REDIS_AUTH"),
		RedisTLS:              r.bool("REDIS_TLS"),
		RedisTLSSkipVerify:    r.bool("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION"),
		RedisTLSCACert:        r.str("REDIS_TLS_CACERT"),
		RedisTLSClientCert:    r.str("REDIS_TLS_CLIENT_CERT"),
		RedisTLSKey:           r.str("REDIS_TLS_CLIENT_KEY"),
		ShadowMode:            r.bool("SHADOW_MODE"),
		ResponseHeaders:       r.bool("LIMIT_RESPONSE_HEADERS_ENABLED"),
		LimitHeader:           r.str("LIMIT_LIMIT_HEADER"),
		RemainingHeader:       r.str("LIMIT_REMAINING_HEADER"),
		ResetHeader:           r.str("LIMIT_RESET_HEADER"),
		NearLimitRatio:        r.float("NEAR_LIMIT_RATIO"),
		CacheKeyPrefix:        r.str("CACHE_KEY_PREFIX"),
		HealthyWithConfig:     r.bool("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED"),
		MetricsExporter:       strings.ToLower(r.str("OTEL_METRICS_EXPORTER")),
		IETFHeaders:           r.bool("RATELUA_IETF_HEADERS"),
		DenyCache:             r.int("RATELUA_DENY_CACHE"),
		Fallback:              r.float("RATELUA_FALLBACK"),
		FailOpen:              r.bool("RATELUA_FAIL_OPEN"),
		ReloadInterval:        r.duration("RATELUA_RELOAD_INTERVAL"),
		MaxDescriptors:        r.int("RATELUA_MAX_DESCRIPTORS"),
		RequestTimeout:        r.duration("RATELUA_REQUEST_TIMEOUT"),
		QuotaMode:             r.bool("QUOTA_MODE"),
		DynamicMetadata:       r.bool("RESPONSE_DYNAMIC_METADATA"),
		LogFormat:             strings.ToLower(r.str("LOG_FORMAT")),
		MaxConnectionAge:      r.duration("GRPC_MAX_CONNECTION_AGE"),
		MaxConnectionAgeGrace: r.duration("GRPC_MAX_CONNECTION_AGE_GRACE"),
	}
	s.Stats = r.stats()
	if v := r.str("BACKEND_TYPE"); v != "redis" {
		r.fail("BACKEND_TYPE", v, "ratelua-rls runs on Redis or Valkey only (redis)")
	}
	if v := r.str("CONFIG_TYPE"); strings.ToUpper(v) != "FILE" {
		r.fail("CONFIG_TYPE", v, "ratelua-rls reads configuration files only (FILE): configuration over xDS (GRPC_XDS_SOTW) is not built")
	}
	s.Unused = r.checkTable()
	if s.Unused == nil {
		s.Unused = []UnusedSetting{}
	}
	switch s.LogFormat {
	case "text", "json":
	default:
		r.fail("LOG_FORMAT", s.LogFormat, "must be text or json")
	}
	if lvl, ok := logLevel(r.str("LOG_LEVEL")); ok {
		s.LogLevel = lvl
	} else {
		r.fail("LOG_LEVEL", r.str("LOG_LEVEL"), "must be trace, debug, info, warn, warning, error, fatal or panic")
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"GRPC_MAX_CONNECTION_AGE", s.MaxConnectionAge}, {"GRPC_MAX_CONNECTION_AGE_GRACE", s.MaxConnectionAgeGrace}} {
		if d.d <= 0 {
			r.fail(d.name, d.d.String(), "must be above 0")
		}
	}
	switch s.MetricsExporter {
	case "none", "otlp":
	default:
		r.fail("OTEL_METRICS_EXPORTER", s.MetricsExporter, "must be otlp or none (ratelua-rls exports OTLP over HTTP only)")
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if v := r.str(name); s.MetricsExporter == "otlp" && v != "http/protobuf" {
			r.fail(name, v, "ratelua-rls exports OTLP over HTTP only (http/protobuf)")
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
	if v := r.str("OTEL_METRIC_EXPORT_INTERVAL"); s.MetricsExporter == "otlp" {
		if ms, err := strconv.ParseInt(v, 10, 64); err != nil || ms <= 0 {
			r.fail("OTEL_METRIC_EXPORT_INTERVAL", v, "must be a number of milliseconds above 0")
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
	for _, t := range ReferenceSettings() {
		if (t.Status == Implemented || t.Status == Own) && !r.read[t.Name] {
			r.fail(t.Name, r.getenv(t.Name), "listed as implemented but never read (a bug of ratelua-rls)")
		}
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

// UnusedSetting is a setting given that ratelua-rls does not use.
type UnusedSetting struct {
	Name, Value, Why string
}

// logLevel is a LOG_LEVEL (logrus's levels, as the reference's) as
// slog's level.
func logLevel(name string) (slog.Level, bool) {
	switch strings.ToLower(name) {
	case "trace":
		return slog.LevelDebug - 4, true
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	case "fatal":
		return slog.LevelError + 4, true
	case "panic":
		return slog.LevelError + 8, true
	}
	return 0, false
}

// envReader reads typed variables by the table's names and defaults,
// remembering the first error.
type envReader struct {
	getenv func(string) string
	table  map[string]Setting
	read   map[string]bool // by the typed readers
	err    error
}

// def is the table's default of name; a name not in the table is an
// error of the program, reported as the first error.
func (r *envReader) def(name string) string {
	t, ok := r.table[name]
	if !ok {
		r.fail(name, "", "not in the table of settings (ReferenceSettings)")
	}
	return t.Default
}

// checkTable parses every setting given by its parser, refuses each
// Refused one set to other than its Off value, and returns the Unused
// ones given (and the Refused ones whose default is not followed).
func (r *envReader) checkTable() []UnusedSetting {
	var unused []UnusedSetting
	explicit := map[string]bool{}
	for _, t := range ReferenceSettings() {
		v := r.getenv(t.Name)
		if v == "" {
			if t.LogUnset {
				unused = append(unused, UnusedSetting{Name: t.Name, Value: "", Why: t.Why})
			}
			continue
		}
		explicit[t.Name] = true
		p, ok := parseSetting(t.Parser, v)
		if !ok {
			r.fail(t.Name, v, "not a value of type "+string(t.Parser)+" (the reference refuses it too)")
			continue
		}
		switch t.Status {
		case Refused:
			off, _ := parseSetting(t.Parser, t.Off)
			if p != off {
				r.fail(t.Name, v, t.Why)
			}
		case Unused:
			unused = append(unused, UnusedSetting{Name: t.Name, Value: v, Why: t.Why})
		}
	}
	for _, name := range []string{"REDIS_POOL_ON_EMPTY_BEHAVIOR"} {
		if v := strings.ToUpper(r.getenv(name)); v != "" && v != "WAIT" {
			r.fail(name, r.getenv(name), "must be WAIT (the reference refuses CREATE and ERROR too)")
		}
	}
	return unused
}

// stats reads where the statistics go, refusing what the reference
// refuses (two sinks at once) and what it would misread.
func (r *envReader) stats() statsink.Config {
	c := statsink.Config{
		Disable:        r.bool("DISABLE_STATS"),
		Statsd:         r.bool("USE_STATSD"),
		StatsdHost:     r.str("STATSD_HOST"),
		StatsdPort:     r.int("STATSD_PORT"),
		StatsdProtocol: strings.ToLower(r.str("STATSD_PROTOCOL")),
		DogStatsd:      r.bool("USE_DOG_STATSD"),
		Prometheus:     r.bool("USE_PROMETHEUS"),
		PrometheusAddr: r.str("PROMETHEUS_ADDR"),
		PrometheusPath: r.str("PROMETHEUS_PATH"),
		FlushInterval:  r.duration("STATS_FLUSH_INTERVAL"),
	}
	tags, err := statsink.ParseTags(r.str("EXTRA_TAGS"))
	if err != nil {
		r.fail("EXTRA_TAGS", r.getenv("EXTRA_TAGS"), err.Error())
	}
	c.ExtraTags = tags
	mogrifiers := r.str("USE_DOG_STATSD_MOGRIFIERS")
	mapper := r.str("PROMETHEUS_MAPPER_YAML")
	if c.Disable {
		// The reference reads nothing else of its statistics then.
		return c
	}
	switch c.StatsdProtocol {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		r.fail("STATSD_PROTOCOL", c.StatsdProtocol, "must be tcp or udp")
	}
	if c.StatsdPort < 0 || c.StatsdPort > 65535 {
		r.fail("STATSD_PORT", strconv.Itoa(c.StatsdPort), "must be a port from 0 to 65535")
	}
	if c.FlushInterval <= 0 {
		r.fail("STATS_FLUSH_INTERVAL", c.FlushInterval.String(), "must be above 0")
	}
	if !strings.HasPrefix(c.PrometheusPath, "/") {
		r.fail("PROMETHEUS_PATH", c.PrometheusPath, "must start with /")
	}
	n := 0
	for _, on := range []bool{c.Statsd, c.DogStatsd, c.Prometheus} {
		if on {
			n++
		}
	}
	if n > 1 {
		name := "USE_DOG_STATSD"
		if !c.DogStatsd {
			name = "USE_PROMETHEUS"
		}
		r.fail(name, r.getenv(name), statsink.ErrSeveralSinks.Error())
	}
	if c.DogStatsd {
		var names []string
		if mogrifiers != "" {
			names = strings.Split(mogrifiers, ",")
		}
		m, err := statsink.MogrifiersFromEnv(names, r.getenv)
		if err != nil {
			r.fail("USE_DOG_STATSD_MOGRIFIERS", mogrifiers, err.Error())
		}
		c.Mogrifiers = m
		// DataDog's client tags every line with these, as the
		// reference's does.
		for _, t := range [...]struct{ env, tag string }{{"DD_ENV", "env"}, {"DD_SERVICE", "service"}, {"DD_VERSION", "version"}} {
			if v := r.getenv(t.env); v != "" {
				c.DogStatsdTags = append(c.DogStatsdTags, t.tag+":"+v)
			}
		}
	}
	if c.Prometheus && mapper != "" {
		b, err := os.ReadFile(mapper)
		if err == nil {
			c.Mapper, err = statsink.ParseMapper(b)
		}
		if err != nil {
			r.fail("PROMETHEUS_MAPPER_YAML", mapper, err.Error())
		}
	}
	return c
}

// parseSetting parses v as a value of p, in a form that compares: a
// string, int64, bool, float64 or time.Duration.
func parseSetting(p Parser, v string) (any, bool) {
	switch p {
	case kindInt:
		n, err := strconv.ParseInt(v, 0, 64)
		return n, err == nil
	case kindBool:
		b, err := strconv.ParseBool(v)
		return b, err == nil
	case kindFloat:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	case kindDuration:
		d, err := time.ParseDuration(v)
		return d, err == nil
	case kindMap:
		for _, pair := range strings.Split(v, ",") {
			if _, _, ok := strings.Cut(pair, ":"); !ok {
				return v, false
			}
		}
	}
	return v, true
}

func (r *envReader) fail(name, value, why string) {
	if r.err == nil {
		r.err = fmt.Errorf("rls: %s=%q: %s", name, value, why)
	}
}

func (r *envReader) str(name string) string {
	r.read[name] = true
	if v := r.getenv(name); v != "" {
		return v
	}
	return r.def(name)
}

func (r *envReader) int(name string) int {
	v := r.str(name)
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(name, v, "not an integer")
	}
	return n
}

func (r *envReader) bool(name string) bool {
	v := r.str(name)
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, v, "not true or false")
	}
	return b
}

func (r *envReader) float(name string) float64 {
	v := r.str(name)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		r.fail(name, v, "not a number")
	}
	return f
}

func (r *envReader) duration(name string) time.Duration {
	v := r.str(name)
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(name, v, "not a duration such as 1s")
	}
	return d
}
