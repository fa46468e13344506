package settings

import (
	"strings"
)

// RedisTarget is how to reach one Redis or Valkey deployment: the main
// one (REDIS_*) or the per-second one (REDIS_PERSECOND_*), read as the
// reference reads them.
type RedisTarget struct {
	// Prefix is the variables' prefix, REDIS or REDIS_PERSECOND, which
	// errors name.
	Prefix string
	// SocketType is unix or tcp.
	SocketType string
	// Type is SINGLE, CLUSTER or SENTINEL.
	Type string
	// URL is a socket path or host:port; a cluster's seed nodes
	// comma-separated; for SENTINEL, the master's name then the
	// sentinels' host:port, comma-separated.
	URL string
	// Auth is password or user:password, for the servers.
	Auth string
	// SentinelAuth is password or user:password, for the sentinels
	// (REDIS_SENTINEL_AUTH, REDIS_PERSECOND_SENTINEL_AUTH).
	SentinelAuth string
	// TLS is TLS to the servers (and sentinels), with the TLS files of
	// REDIS_TLS_* (the reference's one TLS configuration for both).
	TLS bool
}

// Sentinel splits a SENTINEL URL into the master's name and the
// sentinels' addresses.
func (t RedisTarget) Sentinel() (master string, sentinels []string) {
	parts := strings.Split(t.URL, ",")
	return parts[0], parts[1:]
}

// Redis is the main deployment's target.
func (s Settings) Redis() RedisTarget {
	return RedisTarget{Prefix: "REDIS", SocketType: s.RedisSocketType, Type: s.RedisType, URL: s.RedisURL,
		Auth: s.RedisAuth, SentinelAuth: s.RedisSentinelAuth, TLS: s.RedisTLS}
}

// redisTarget reads the target of prefix (REDIS or REDIS_PERSECOND), and
// checks it when used.
func (r *envReader) redisTarget(prefix string, used bool) RedisTarget {
	t := RedisTarget{
		Prefix:       prefix,
		SocketType:   strings.ToLower(r.str(prefix + "_SOCKET_TYPE")),
		Type:         strings.ToUpper(r.str(prefix + "_TYPE")),
		URL:          r.str(prefix + "_URL"),
		Auth:         r.str(prefix + "_AUTH"),
		SentinelAuth: r.str(prefix + "_SENTINEL_AUTH"),
		TLS:          r.bool(prefix + "_TLS"),
	}
	if !used {
		return t
	}
	switch t.SocketType {
	case "unix", "tcp":
	default:
		r.fail(prefix+"_SOCKET_TYPE", t.SocketType, "must be unix or tcp")
	}
	switch t.Type {
	case "SINGLE", "CLUSTER":
	case "SENTINEL":
		if _, sentinels := t.Sentinel(); len(sentinels) == 0 {
			r.fail(prefix+"_URL", t.URL, "with "+prefix+"_TYPE=SENTINEL, must be <master name>,<sentinel host:port>,... (the reference's form)")
		}
	default:
		r.fail(prefix+"_TYPE", t.Type, "must be SINGLE, CLUSTER or SENTINEL")
	}
	return t
}

// perSecondOnly reports whether name is read only with
// REDIS_PERSECOND=true.
func perSecondOnly(name string) bool {
	return strings.HasPrefix(name, "REDIS_PERSECOND_")
}

// perSecondUnused lists the per-second settings given while
// REDIS_PERSECOND is false (the Unused ones are listed already).
func (r *envReader) perSecondUnused() []UnusedSetting {
	var unused []UnusedSetting
	for _, t := range Table() {
		if v := r.getenv(t.Name); v != "" && perSecondOnly(t.Name) && t.Status == Implemented {
			unused = append(unused, UnusedSetting{Name: t.Name, Value: v, Why: "read only with REDIS_PERSECOND=true"})
		}
	}
	return unused
}
