package settings

// SettingStatus is what ratelua-rls does with one environment variable.
type SettingStatus string

const (
	// Implemented: read, and it does what it does in the reference.
	Implemented SettingStatus = "implemented"
	// Refused: a value that would turn on what ratelua-rls does not
	// build stops the start with an error naming the variable.
	Refused SettingStatus = "refused"
	// Unused: tuning that does not apply to ratelua-rls (pool sizes,
	// pipelining), or a setting read only by a feature that is refused;
	// accepted (its value parsed as the reference would) and logged once
	// at the start as not used.
	Unused SettingStatus = "unused"
	// Own: ratelua-rls's own setting, not the reference's.
	Own SettingStatus = "own"
)

// Parser is the type a setting's value has (the reference's envconfig
// type): a value that does not parse stops the start, as it stops the
// reference's.
type Parser string

const (
	// kindString is any text.
	kindString Parser = "string"
	// kindInt is a decimal integer.
	kindInt Parser = "int"
	// kindBool is strconv.ParseBool's: 1, t, true, 0, f, false...
	kindBool Parser = "bool"
	// kindFloat is a decimal number.
	kindFloat Parser = "float"
	// kindDuration is time.ParseDuration's, such as 10s.
	kindDuration Parser = "duration"
	// kindList is comma-separated text.
	kindList Parser = "list"
	// kindMap is comma-separated key:value pairs.
	kindMap Parser = "map"
)

// Setting is one environment variable: the reference's (every
// envconfig tag of envoyproxy/ratelimit's settings.Settings at the
// pinned version) or ratelua-rls's own.
type Setting struct {
	Name    string
	Default string
	Parser  Parser
	Status  SettingStatus
	// Off, for a Refused setting, is the value under which it is
	// accepted (false for a switch, 0 for a size); a value set that
	// parses to anything else is refused.
	Off string
	// Why says how it is implemented, why it is refused, or why it does
	// not apply.
	Why string
}

// Table returns every setting ratelua-rls reads, in the
// reference's order, then its own.
func Table() []Setting {
	const (
		memcache = "read only with BACKEND_TYPE=memcache, which is refused"
		pool     = "rueidis multiplexes one connection per node and pipelines on its own: no pool to size"
	)
	return []Setting{
		{Name: "HOST", Default: "0.0.0.0", Parser: kindString, Status: Implemented, Why: "the HTTP listener's address"},
		{Name: "PORT", Default: "8080", Parser: kindInt, Status: Implemented, Why: "the HTTP listener's port: /healthcheck, /json, /stats"},
		{Name: "DEBUG_HOST", Default: "0.0.0.0", Parser: kindString, Status: Implemented, Why: "the debug listener's address: /rlconfig (the configuration in use, as the reference prints it), /debug/pprof/, /stats (expvar), / (the list)"},
		{Name: "DEBUG_PORT", Default: "6070", Parser: kindInt, Status: Implemented, Why: "the debug listener's port; one that cannot be listened on is logged and the service goes on, as the reference's"},
		{Name: "GRPC_UDS", Parser: kindString, Status: Implemented, Why: "the gRPC listener on a unix socket instead of GRPC_HOST:GRPC_PORT"},
		{Name: "GRPC_HOST", Default: "0.0.0.0", Parser: kindString, Status: Implemented, Why: "the gRPC listener's address"},
		{Name: "GRPC_PORT", Default: "8081", Parser: kindInt, Status: Implemented, Why: "the gRPC listener's port"},
		{Name: "GRPC_MAX_CONNECTION_AGE", Default: "24h", Parser: kindDuration, Status: Implemented, Why: "the gRPC server's keepalive MaxConnectionAge (GOAWAY after it)"},
		{Name: "GRPC_MAX_CONNECTION_AGE_GRACE", Default: "1h", Parser: kindDuration, Status: Implemented, Why: "the gRPC server's keepalive MaxConnectionAgeGrace"},
		{Name: "GRPC_SERVER_USE_TLS", Default: "false", Parser: kindBool, Status: Implemented, Why: "gRPC over TLS with GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY (both required; a file that does not load stops the start, naming the variable)"},
		{Name: "GRPC_SERVER_TLS_CERT", Parser: kindString, Status: Implemented, Why: "the server's certificate (read once at the start; the reference also reloads it when the file changes)"},
		{Name: "GRPC_SERVER_TLS_KEY", Parser: kindString, Status: Implemented, Why: "the server certificate's key"},
		{Name: "GRPC_CLIENT_TLS_CACERT", Parser: kindString, Status: Implemented, Why: "when given, every client must present a certificate verified by this CA or the system's roots, as the reference pools them; when empty, no client certificate is asked for"},
		{Name: "GRPC_CLIENT_TLS_SAN", Parser: kindString, Status: Implemented, Why: "with GRPC_CLIENT_TLS_CACERT, the name the client's certificate must hold, for client authentication (ignored without a CA, as in the reference)"},
		{Name: "LOG_LEVEL", Default: "info", Parser: kindString, Status: Implemented, Why: "trace, debug, info, warn (warning), error, fatal or panic; the default is info (the reference's is WARN) so that the start, the loads and the stop are logged"},
		{Name: "LOG_FORMAT", Default: "text", Parser: kindString, Status: Implemented, Why: "text or json (log/slog's handlers)"},
		{Name: "CONFIG_TYPE", Default: "FILE", Parser: kindString, Status: Implemented, Why: "FILE: the files of the configuration directory; GRPC_XDS_SOTW: RateLimitConfig resources from an xDS server (CONFIG_GRPC_XDS_*), each update applied whole or refused (NACK) with the last good configuration kept"},
		{Name: "FORCE_START_WITHOUT_INITIAL_CONFIG", Default: "false", Parser: kindBool, Status: Implemented, Why: "with GRPC_XDS_SOTW, serve at once instead of after the first update from the xDS server (a FILE configuration never blocks the start)"},
		{Name: "CONFIG_GRPC_XDS_NODE_ID", Default: "default", Parser: kindString, Status: Implemented, Why: "the node id sent to the xDS server, which keys its snapshots by it"},
		{Name: "CONFIG_GRPC_XDS_NODE_METADATA", Parser: kindString, Status: Implemented, Why: "the node's metadata, key=value pairs comma-separated (a pair without = is refused; the reference skips it)"},
		{Name: "CONFIG_GRPC_XDS_SERVER_URL", Default: "localhost:18000", Parser: kindString, Status: Implemented, Why: "the xDS server's gRPC address"},
		{Name: "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", Default: "3s", Parser: kindDuration, Status: Implemented, Why: "the wait between attempts to connect to the xDS server"},
		{Name: "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", Parser: kindMap, Status: Implemented, Why: "headers sent with the xDS stream, key:value pairs comma-separated"},
		{Name: "CONFIG_GRPC_XDS_SERVER_USE_TLS", Default: "false", Parser: kindBool, Status: Implemented, Why: "TLS to the xDS server"},
		{Name: "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", Parser: kindString, Status: Implemented, Why: "with CONFIG_GRPC_XDS_CLIENT_TLS_KEY, the client's certificate for the xDS server (one without the other is refused)"},
		{Name: "CONFIG_GRPC_XDS_CLIENT_TLS_KEY", Parser: kindString, Status: Implemented, Why: "see CONFIG_GRPC_XDS_CLIENT_TLS_CERT"},
		{Name: "CONFIG_GRPC_XDS_SERVER_TLS_CACERT", Parser: kindString, Status: Implemented, Why: "the CA the xDS server's certificate is verified with, beside the system's"},
		{Name: "CONFIG_GRPC_XDS_SERVER_TLS_SAN", Parser: kindString, Status: Implemented, Why: "the name the xDS server's certificate must hold (the address's host when empty)"},
		{Name: "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", Default: "10s", Parser: kindDuration, Status: Implemented, Why: "the first wait before opening the xDS stream again after it broke; each next wait doubles"},
		{Name: "XDS_CLIENT_BACKOFF_MAX_INTERVAL", Default: "60s", Parser: kindDuration, Status: Implemented, Why: "the longest wait before opening the xDS stream again"},
		{Name: "XDS_CLIENT_BACKOFF_RANDOM_FACTOR", Default: "0.5", Parser: kindFloat, Status: Implemented, Why: "with XDS_CLIENT_BACKOFF_JITTER, each wait is drawn within this share of itself (0 to 1)"},
		{Name: "XDS_CLIENT_BACKOFF_JITTER", Default: "true", Parser: kindBool, Status: Implemented, Why: "see XDS_CLIENT_BACKOFF_RANDOM_FACTOR"},
		{Name: "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", Parser: kindInt, Status: Implemented, Why: "the largest xDS response taken (gRPC's 4 MiB when unset)"},
		{Name: "USE_DOG_STATSD", Default: "false", Parser: kindBool, Status: Implemented, Why: "dogstatsd lines over UDP to STATSD_HOST:STATSD_PORT, as the reference's DataDog client sends them, with EXTRA_TAGS (and DD_ENV, DD_SERVICE, DD_VERSION, as the client adds them) as tags; with USE_STATSD=false (two sinks at once are refused, as the reference refuses them)"},
		{Name: "USE_DOG_STATSD_MOGRIFIERS", Parser: kindList, Status: Implemented, Why: "the mogrifiers of the dogstatsd names, as the reference's: for each NAME, DOG_STATSD_MOGRIFIER_NAME_PATTERN (a regular expression), _NAME and _TAGS (key:value,... with $1... the groups); a missing or bad one is refused"},
		{Name: "USE_STATSD", Default: "true", Parser: kindBool, Status: Implemented, Why: "statsd to STATSD_HOST:STATSD_PORT (on by default, as the reference): every STATS_FLUSH_INTERVAL, each counter's increase since the last flush, the Go runtime's gauges, each response time; the reference's names (ratelimit.service.rate_limit.<rule>.<statistic>, ratelimit.service.config_load_success, ...)"},
		{Name: "STATSD_HOST", Default: "localhost", Parser: kindString, Status: Implemented, Why: "the statsd or dogstatsd server's host"},
		{Name: "STATSD_PORT", Default: "8125", Parser: kindInt, Status: Implemented, Why: "the statsd or dogstatsd server's port"},
		{Name: "EXTRA_TAGS", Parser: kindMap, Status: Implemented, Why: "key:value,... tags of every statistic: appended to statsd names as the reference's (.__key=value), dogstatsd tags"},
		{Name: "STATS_FLUSH_INTERVAL", Default: "10s", Parser: kindDuration, Status: Implemented, Why: "the time between two flushes of the statistics (statsd, dogstatsd, Prometheus), and a last one at shutdown"},
		{Name: "DISABLE_STATS", Default: "false", Parser: kindBool, Status: Implemented, Why: "no statsd, dogstatsd or Prometheus statistics, whatever else is set; /stats still answers"},
		{Name: "USE_PROMETHEUS", Default: "false", Parser: kindBool, Status: Implemented, Why: "the statistics on PROMETHEUS_ADDR at PROMETHEUS_PATH, named and labelled as the reference's (its statsd_exporter mapping), with USE_STATSD=false"},
		{Name: "PROMETHEUS_ADDR", Default: ":9090", Parser: kindString, Status: Implemented, Why: "the Prometheus listener's address; one that cannot be listened on stops the start"},
		{Name: "PROMETHEUS_PATH", Default: "/metrics", Parser: kindString, Status: Implemented, Why: "the Prometheus endpoint's path"},
		{Name: "PROMETHEUS_MAPPER_YAML", Parser: kindString, Status: Implemented, Why: "a statsd_exporter mapping file instead of the reference's mapping: globs, regular expressions, labels, drop, match_metric_type, histogram buckets; a field it cannot apply (ttl, summary quantiles) or a file that does not parse stops the start (the reference ignores a bad file)"},
		{Name: "RUNTIME_ROOT", Default: "/srv/runtime_data/current", Parser: kindString, Status: Implemented, Why: "the configuration directory is RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY"},
		{Name: "RUNTIME_SUBDIRECTORY", Parser: kindString, Status: Implemented, Why: "see RUNTIME_ROOT"},
		{Name: "RUNTIME_APPDIRECTORY", Default: "config", Parser: kindString, Status: Implemented, Why: "see RUNTIME_ROOT"},
		{Name: "RUNTIME_IGNOREDOTFILES", Default: "false", Parser: kindBool, Status: Implemented, Why: "files whose names start with a dot are not read"},
		{Name: "RUNTIME_WATCH_ROOT", Default: "true", Parser: kindBool, Status: Implemented, Why: "read; the directory is polled every RATELUA_RELOAD_INTERVAL either way, which sees a symlink swap of the root or of the directory"},
		{Name: "EXPIRATION_JITTER_MAX_SECONDS", Default: "300", Parser: kindInt, Status: Unused, Why: "a counter's EXPIRE is the unit's seconds, with no jitter: it serves one window, which ends within the unit's seconds of any call in it, so the jitter (which spreads the reference's expiries) changes no count"},
		{Name: "LOCAL_CACHE_SIZE_IN_BYTES", Default: "0", Parser: kindInt, Status: Implemented, Why: "the reference's local cache for reference rules: a descriptor found over its limit is OVER_LIMIT until its window ends, under any limit, its hits not sent to Redis and counted as over_limit_with_local_cache; one descriptor per 128 bytes (at least 512 KiB, as freecache), least recently used dropped first"},
		{Name: "NEAR_LIMIT_RATIO", Default: "0.8", Parser: kindFloat, Status: Implemented, Why: "the near_limit statistic"},
		{Name: "CACHE_KEY_PREFIX", Parser: kindString, Status: Implemented, Why: "starts every state key: a reference rule's as the reference's (with RATELUA_SHARE_REFERENCE_COUNTERS), the others' before rls:"},
		{Name: "BACKEND_TYPE", Default: "redis", Parser: kindString, Status: Implemented, Why: "redis; memcache is refused: ratelua-rls runs on Redis or Valkey only"},
		{Name: "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", Default: "false", Parser: kindBool, Status: Implemented, Why: "as the reference: the counts of a request's reference rules are read first; when one would go over its limit, only those that would count the request's hits, the others nothing (answered from the count read); extension rules take no part"},
		{Name: "LIMIT_RESPONSE_HEADERS_ENABLED", Default: "false", Parser: kindBool, Status: Implemented, Why: "the three headers of the descriptor closest to its limit"},
		{Name: "LIMIT_LIMIT_HEADER", Default: "RateLimit-Limit", Parser: kindString, Status: Implemented, Why: "see LIMIT_RESPONSE_HEADERS_ENABLED"},
		{Name: "LIMIT_REMAINING_HEADER", Default: "RateLimit-Remaining", Parser: kindString, Status: Implemented, Why: "see LIMIT_RESPONSE_HEADERS_ENABLED"},
		{Name: "LIMIT_RESET_HEADER", Default: "RateLimit-Reset", Parser: kindString, Status: Implemented, Why: "see LIMIT_RESPONSE_HEADERS_ENABLED"},
		{Name: "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", Default: "false", Parser: kindBool, Status: Implemented, Why: "/healthcheck fails until a configuration is in use"},
		{Name: "REDIS_SOCKET_TYPE", Default: "unix", Parser: kindString, Status: Implemented, Why: "unix or tcp"},
		{Name: "REDIS_TYPE", Default: "SINGLE", Parser: kindString, Status: Implemented, Why: "SINGLE, CLUSTER or SENTINEL (REDIS_URL is then the master's name and the sentinels' host:port, comma-separated, as the reference's: decisions go to the master the sentinels name, and follow a failover)"},
		{Name: "REDIS_URL", Default: "/var/run/nutcracker/ratelimit.sock", Parser: kindString, Status: Implemented, Why: "a socket path or host:port; a cluster's seed nodes comma-separated; with SENTINEL, the master's name then the sentinels' host:port, comma-separated"},
		{Name: "REDIS_POOL_SIZE", Default: "10", Parser: kindInt, Status: Unused, Why: pool},
		{Name: "REDIS_AUTH", Parser: kindString, Status: Implemented, Why: "password, or user:password"},
		{Name: "REDIS_TLS", Default: "false", Parser: kindBool, Status: Implemented, Why: "TLS to the server (and the sentinels); one that answers without TLS is named as such"},
		{Name: "REDIS_TLS_CLIENT_CERT", Parser: kindString, Status: Implemented, Why: "with REDIS_TLS_CLIENT_KEY, the client's certificate"},
		{Name: "REDIS_TLS_CLIENT_KEY", Parser: kindString, Status: Implemented, Why: "see REDIS_TLS_CLIENT_CERT"},
		{Name: "REDIS_TLS_CACERT", Parser: kindString, Status: Implemented, Why: "the CA the server's certificate is verified with"},
		{Name: "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", Default: "false", Parser: kindBool, Status: Implemented, Why: "the server's certificate is not verified"},
		{Name: "REDIS_PIPELINE_WINDOW", Default: "0", Parser: kindDuration, Status: Unused, Why: pool},
		{Name: "REDIS_PIPELINE_LIMIT", Default: "0", Parser: kindInt, Status: Unused, Why: pool},
		{Name: "REDIS_PERSECOND", Default: "false", Parser: kindBool, Status: Implemented, Why: "a second deployment (REDIS_PERSECOND_*) for the limits whose unit is a second, as the reference's: reference rules and descriptors' own limits of unit second, and extension rules whose every limit is of unit second; the rest on REDIS_URL"},
		{Name: "REDIS_PERSECOND_SOCKET_TYPE", Default: "unix", Parser: kindString, Status: Implemented, Why: "as REDIS_SOCKET_TYPE, for the per-second deployment"},
		{Name: "REDIS_PERSECOND_TYPE", Default: "SINGLE", Parser: kindString, Status: Implemented, Why: "as REDIS_TYPE, for the per-second deployment"},
		{Name: "REDIS_PERSECOND_URL", Default: "/var/run/nutcracker/ratelimitpersecond.sock", Parser: kindString, Status: Implemented, Why: "as REDIS_URL, for the per-second deployment"},
		{Name: "REDIS_PERSECOND_POOL_SIZE", Default: "10", Parser: kindInt, Status: Unused, Why: pool},
		{Name: "REDIS_PERSECOND_AUTH", Parser: kindString, Status: Implemented, Why: "as REDIS_AUTH, for the per-second deployment"},
		{Name: "REDIS_PERSECOND_TLS", Default: "false", Parser: kindBool, Status: Implemented, Why: "TLS to the per-second deployment, with the files of REDIS_TLS_CLIENT_CERT, REDIS_TLS_CLIENT_KEY, REDIS_TLS_CACERT and REDIS_TLS_SKIP_HOSTNAME_VERIFICATION (the reference's one TLS configuration)"},
		{Name: "REDIS_SENTINEL_AUTH", Parser: kindString, Status: Implemented, Why: "password, or user:password, of the sentinels with REDIS_TYPE=SENTINEL (REDIS_AUTH is the servers')"},
		{Name: "REDIS_PERSECOND_SENTINEL_AUTH", Parser: kindString, Status: Implemented, Why: "as REDIS_SENTINEL_AUTH, for the per-second deployment"},
		{Name: "REDIS_PERSECOND_PIPELINE_WINDOW", Default: "0", Parser: kindDuration, Status: Unused, Why: pool},
		{Name: "REDIS_PERSECOND_PIPELINE_LIMIT", Default: "0", Parser: kindInt, Status: Unused, Why: pool},
		{Name: "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", Default: "false", Parser: kindBool, Status: Refused, Off: "false", Why: "not built: with it the reference's /healthcheck follows its radix pools' connections (a pool trace marks it failed when the last open connection closes, OK when one opens); ratelua-rls does not count rueidis's connections, so /healthcheck would say OK while Redis is unreachable"},
		{Name: "REDIS_TIMEOUT", Default: "10s", Parser: kindDuration, Status: Unused, Why: "a request is bounded by its gRPC deadline, else RATELUA_REQUEST_TIMEOUT"},
		{Name: "REDIS_PERSECOND_TIMEOUT", Default: "10s", Parser: kindDuration, Status: Unused, Why: "a request is bounded by its gRPC deadline, else RATELUA_REQUEST_TIMEOUT"},
		{Name: "REDIS_POOL_ON_EMPTY_BEHAVIOR", Default: "WAIT", Parser: kindString, Status: Unused, Why: pool + "; CREATE and ERROR are refused, as the reference refuses them"},
		{Name: "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR", Default: "WAIT", Parser: kindString, Status: Unused, Why: pool + "; CREATE and ERROR are refused, as the reference refuses them"},
		{Name: "MEMCACHE_HOST_PORT", Parser: kindList, Status: Unused, Why: memcache},
		{Name: "MEMCACHE_MAX_IDLE_CONNS", Default: "2", Parser: kindInt, Status: Unused, Why: memcache},
		{Name: "MEMCACHE_SRV", Parser: kindString, Status: Unused, Why: memcache},
		{Name: "MEMCACHE_SRV_REFRESH", Default: "0", Parser: kindDuration, Status: Unused, Why: memcache},
		{Name: "MEMCACHE_TLS", Default: "false", Parser: kindBool, Status: Unused, Why: memcache},
		{Name: "MEMCACHE_TLS_CLIENT_CERT", Parser: kindString, Status: Unused, Why: memcache},
		{Name: "MEMCACHE_TLS_CLIENT_KEY", Parser: kindString, Status: Unused, Why: memcache},
		{Name: "MEMCACHE_TLS_CACERT", Parser: kindString, Status: Unused, Why: memcache},
		{Name: "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION", Default: "false", Parser: kindBool, Status: Unused, Why: memcache},
		{Name: "SHADOW_MODE", Default: "false", Parser: kindBool, Status: Implemented, Why: "every answer OK, after deciding and counting"},
		{Name: "QUOTA_MODE", Default: "false", Parser: kindBool, Status: Implemented, Why: "every rule in quota mode: an over-limit descriptor is OK with its limit and remaining, and never denies"},
		{Name: "RESPONSE_DYNAMIC_METADATA", Default: "false", Parser: kindBool, Status: Implemented, Why: "the response's dynamic_metadata as the reference's: domain, descriptors, hitsAddend, quotaModeViolations, quotaModeEnabled"},
		{Name: "MERGE_DOMAIN_CONFIG", Default: "false", Parser: kindBool, Status: Implemented, Why: "files of one domain are merged instead of refused"},
		{Name: "TRACING_ENABLED", Default: "false", Parser: kindBool, Status: Implemented, Why: "an OpenTelemetry span (ShouldRateLimit Execution) for each ShouldRateLimit call, exported over OTLP to OTEL_EXPORTER_OTLP_* (read by the exporter), the caller's traceparent its parent"},
		{Name: "TRACING_SERVICE_NAME", Default: "RateLimit", Parser: kindString, Status: Implemented, Why: "the resource's service.name"},
		{Name: "TRACING_SERVICE_NAMESPACE", Parser: kindString, Status: Implemented, Why: "the resource's service.namespace"},
		{Name: "TRACING_SERVICE_INSTANCE_ID", Parser: kindString, Status: Implemented, Why: "the resource's service.instance.id (a random UUID when empty)"},
		{Name: "TRACING_EXPORTER_PROTOCOL", Default: "http", Parser: kindString, Status: Implemented, Why: "http or grpc (OTLP); another is refused"},
		{Name: "TRACING_SAMPLING_RATE", Default: "1", Parser: kindFloat, Status: Implemented, Why: "the share of traces sampled, the parent's decision kept (ParentBased, TraceIDRatioBased); outside 0 to 1 is refused"},

		{Name: "STATSD_PROTOCOL", Default: "tcp", Parser: kindString, Status: Own, Why: "tcp or udp: the statsd transport, which the reference's statsd client (gostats) reads from the environment"},
		{Name: "OTEL_METRICS_EXPORTER", Default: "none", Parser: kindString, Status: Own, Why: "otlp: the statistics per rule as OpenTelemetry metrics (OTLP over HTTP, OTEL_EXPORTER_OTLP_*)"},
		{Name: "OTEL_EXPORTER_OTLP_PROTOCOL", Default: "http/protobuf", Parser: kindString, Status: Own, Why: "http/protobuf only"},
		{Name: "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", Default: "http/protobuf", Parser: kindString, Status: Own, Why: "http/protobuf only"},
		{Name: "OTEL_METRIC_EXPORT_INTERVAL", Default: "60000", Parser: kindInt, Status: Own, Why: "milliseconds between exports"},
		{Name: "RATELUA_IETF_HEADERS", Default: "false", Parser: kindBool, Status: Own, Why: "the IETF RateLimit-Policy and RateLimit headers"},
		{Name: "RATELUA_DENY_CACHE", Default: "0", Parser: kindInt, Status: Own, Why: "descriptors over their limit answered without a round trip"},
		{Name: "RATELUA_FALLBACK", Default: "0", Parser: kindFloat, Status: Own, Why: "the share of each limit held locally while the server is down"},
		{Name: "RATELUA_FAIL_OPEN", Default: "false", Parser: kindBool, Status: Own, Why: "admit when the server is down"},
		{Name: "RATELUA_SHARE_REFERENCE_COUNTERS", Default: "true", Parser: kindBool, Status: Own, Why: "reference rules count on envoyproxy/ratelimit's own keys (CACHE_KEY_PREFIX, domain, entries, window start), INCRBY by every hit and EXPIRE by the unit's seconds, so a fleet running both enforces each limit once; false: ratelua-rls's own keys (under CACHE_KEY_PREFIX:rls, no two descriptors sharing one)"},
		{Name: "RATELUA_RELOAD_INTERVAL", Default: "1s", Parser: kindDuration, Status: Own, Why: "how often the configuration directory is polled"},
		{Name: "RATELUA_MAX_DESCRIPTORS", Default: "1000", Parser: kindInt, Status: Own, Why: "the most descriptors of one request"},
		{Name: "RATELUA_REQUEST_TIMEOUT", Default: "2s", Parser: kindDuration, Status: Own, Why: "bounds a request whose caller set no deadline"},
	}
}
