package settings

import (
	"strconv"
	"strings"
	"time"
)

// FromEnv reads the settings from getenv (os.Getenv in the
// command). Every
// value that does not parse, and every reference feature ratelua-rls does
// not have, is an error naming the variable.
func FromEnv(getenv func(string) string) (Settings, error) {
	r := envReader{getenv: getenv, table: map[string]Setting{}, read: map[string]bool{}}
	for _, t := range Table() {
		r.table[t.Name] = t
	}
	s := Settings{
		Host:                  r.str("HOST"),
		Port:                  r.int("PORT"),
		GRPCHost:              r.str("GRPC_HOST"),
		DebugHost:             r.str("DEBUG_HOST"),
		DebugPort:             r.int("DEBUG_PORT"),
		GRPCPort:              r.int("GRPC_PORT"),
		GRPCUDS:               r.str("GRPC_UDS"),
		RuntimeRoot:           r.str("RUNTIME_ROOT"),
		RuntimeSubdirectory:   r.str("RUNTIME_SUBDIRECTORY"),
		RuntimeAppDirectory:   r.str("RUNTIME_APPDIRECTORY"),
		RuntimeIgnoreDotFiles: r.bool("RUNTIME_IGNOREDOTFILES"),
		RuntimeWatchRoot:      r.bool("RUNTIME_WATCH_ROOT"),
		MergeDomains:          r.bool("MERGE_DOMAIN_CONFIG"),
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
		StopIncrement:         r.bool("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT"),
		HealthyWithConfig:     r.bool("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED"),
		MetricsExporter:       strings.ToLower(r.str("OTEL_METRICS_EXPORTER")),
		IETFHeaders:           r.bool("RATELUA_IETF_HEADERS"),
		DenyCache:             r.int("RATELUA_DENY_CACHE"),
		LocalCacheBytes:       r.int("LOCAL_CACHE_SIZE_IN_BYTES"),
		Fallback:              r.float("RATELUA_FALLBACK"),
		FailOpen:              r.bool("RATELUA_FAIL_OPEN"),
		ShareCounters:         r.bool("RATELUA_SHARE_REFERENCE_COUNTERS"),
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
	s.GRPCTLS = r.grpcTLS()
	s.Tracing = r.tracing()
	if v := r.str("BACKEND_TYPE"); v != "redis" {
		r.fail("BACKEND_TYPE", v, "ratelua-rls runs on Redis or Valkey only (redis)")
	}
	s.ConfigType = strings.ToUpper(r.str("CONFIG_TYPE"))
	switch s.ConfigType {
	case ConfigFile:
	case ConfigXDS:
		s.ForceStart = r.bool("FORCE_START_WITHOUT_INITIAL_CONFIG")
		s.XDS = r.xds()
	default:
		r.fail("CONFIG_TYPE", r.str("CONFIG_TYPE"), "must be FILE (the configuration directory) or GRPC_XDS_SOTW (an xDS server)")
	}
	s.Unused = r.checkTable()
	s.Unused = append(s.Unused, r.grpcTLSUnused(s.GRPCTLS)...)
	s.Unused = append(s.Unused, r.tracingUnused(s.Tracing)...)
	if s.ConfigType != ConfigXDS {
		s.Unused = append(s.Unused, r.xdsUnused()...)
	}
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
	main := r.redisTarget("REDIS", true)
	s.RedisSocketType, s.RedisType, s.RedisURL, s.RedisAuth, s.RedisSentinelAuth, s.RedisTLS = main.SocketType, main.Type, main.URL, main.Auth, main.SentinelAuth, main.TLS
	perSecondOn := r.bool("REDIS_PERSECOND")
	perSecond := r.redisTarget("REDIS_PERSECOND", perSecondOn)
	if perSecondOn {
		s.PerSecond = &perSecond
	} else {
		s.Unused = append(s.Unused, r.perSecondUnused()...)
	}
	if strings.ContainsAny(s.CacheKeyPrefix, "{}") {
		r.fail("CACHE_KEY_PREFIX", s.CacheKeyPrefix, "may not contain '{' or '}'")
	}
	for _, p := range []struct {
		name string
		port int
	}{{"PORT", s.Port}, {"GRPC_PORT", s.GRPCPort}, {"DEBUG_PORT", s.DebugPort}} {
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
	if s.LocalCacheBytes < 0 {
		r.fail("LOCAL_CACHE_SIZE_IN_BYTES", strconv.Itoa(s.LocalCacheBytes), "must be 0 (no local cache) or a number of bytes above 0")
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
	for _, t := range Table() {
		if (t.Status == Implemented || t.Status == Own) && !r.read[t.Name] && !(s.ConfigType != ConfigXDS && xdsOnly(t.Name)) {
			r.fail(t.Name, r.getenv(t.Name), "listed as implemented but never read (a bug of ratelua-rls)")
		}
	}
	if r.err != nil {
		return s, r.err
	}
	return s, nil
}
