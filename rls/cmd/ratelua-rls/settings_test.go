package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/rls/settings"
)

// env is a getenv of the given NAME=value pairs.
func env(kv ...string) func(string) string {
	return func(name string) string {
		for _, e := range kv {
			if n, v, _ := strings.Cut(e, "="); n == name {
				return v
			}
		}
		return ""
	}
}

// TestBadSettingStopsTheStart (issue 30, M2): the service does not start
// on RATELUA_FALLBACK=NaN (before, it served, healthy, and answered every
// request Unavailable): exit 2 and a message naming the variable.
func TestBadSettingStopsTheStart(t *testing.T) {
	for _, v := range []string{"NaN", "0.0001"} {
		var out, errs bytes.Buffer
		code := run(nil, env("RATELUA_FALLBACK="+v, "REDIS_SOCKET_TYPE=tcp", "REDIS_URL=127.0.0.1:1"), &out, &errs)
		if code != 2 || !strings.Contains(errs.String(), `RATELUA_FALLBACK="`+v+`"`) {
			t.Errorf("RATELUA_FALLBACK=%s: exit %d, %q; want 2 and the variable named", v, code, errs.String())
		}
	}
}

// TestCheckReadsTheSettings (issue 30, M1): check refuses, as the server
// does, a reference rule that RATELUA_FALLBACK rounds down to 0, naming
// the file and line, and refuses a bad setting.
func TestCheckReadsTheSettings(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 10}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := run([]string{"check", dir}, env("RATELUA_FALLBACK=0.05"), &out, &errs); code != 1 || !strings.Contains(errs.String(), "a.yaml:4: the fallback share 0.05 (RATELUA_FALLBACK) of requests_per_unit 10 rounds down to 0") {
		t.Errorf("check with RATELUA_FALLBACK=0.05: exit %d, %q %q; want 1 and a.yaml:4 named", code, out.String(), errs.String())
	}
	errs.Reset()
	if code := run([]string{"check", dir}, env("RATELUA_FALLBACK=NaN"), &out, &errs); code != 2 || !strings.Contains(errs.String(), "RATELUA_FALLBACK") {
		t.Errorf("check with RATELUA_FALLBACK=NaN: exit %d, %q; want 2 naming the variable", code, errs.String())
	}
	out.Reset()
	if code := run([]string{"check", dir}, env("RATELUA_FALLBACK=0.1"), &out, &errs); code != 0 || !strings.Contains(out.String(), "1 rules, OK") {
		t.Errorf("check with RATELUA_FALLBACK=0.1: exit %d, %q", code, out.String())
	}
}

// refusedValue is a value that turns a Refused setting on: true for a
// switch, 1 for a size.
func refusedValue(s settings.Setting) string {
	if s.Parser == "bool" {
		return "true"
	}
	return "1"
}

// TestRefusedSettingsStopTheStart (issue 33 row 3): GRPC_SERVER_USE_TLS (now
// implemented: its certificate files are checked at the start),
// TRACING_ENABLED (now implemented: a bad protocol or rate is refused),
// USE_PROMETHEUS, USE_STATSD=true... started a service
// that ignored them (plaintext to a TLS Envoy, monitoring dark; the
// statistics are exported since, and two sinks at once are refused). Every
// Refused setting of the table, turned on, and every refused value of an
// implemented one, stops the command before it connects: exit 2 and a
// message naming the variable and its value; nothing listens.
func TestRefusedSettingsStopTheStart(t *testing.T) {
	type refusal struct{ env []string }
	cases := []refusal{
		{[]string{"CONFIG_TYPE=KUBERNETES"}},
		// xDS settings the client cannot work with.
		{[]string{"CONFIG_TYPE=GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_NODE_METADATA=zone:a"}},
		{[]string{"CONFIG_TYPE=GRPC_XDS_SOTW", "XDS_CLIENT_BACKOFF_RANDOM_FACTOR=2"}},
		{[]string{"CONFIG_TYPE=GRPC_XDS_SOTW", "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL=0s"}},
		{[]string{"CONFIG_TYPE=GRPC_XDS_SOTW", "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES=-1"}},
		{[]string{"CONFIG_TYPE=GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL=0s"}},
		{[]string{"CONFIG_GRPC_XDS_SERVER_USE_TLS=true", "CONFIG_GRPC_XDS_SERVER_TLS_CACERT=/nonexistent/ca.pem", "CONFIG_TYPE=GRPC_XDS_SOTW"}},
		{[]string{"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS=novalue"}}, // a map's value parses even with FILE
		{[]string{"REDIS_TYPE=SENTINELS"}},
		{[]string{"REDIS_TYPE=SENTINEL", "REDIS_URL=mymaster"}}, // no sentinel named
		{[]string{"REDIS_PERSECOND=true", "REDIS_PERSECOND_TYPE=MASTER"}},
		{[]string{"REDIS_PERSECOND=true", "REDIS_PERSECOND_SOCKET_TYPE=udp"}},
		{[]string{"REDIS_PERSECOND=true", "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR=ERROR"}},
		{[]string{"BACKEND_TYPE=memcache"}},
		{[]string{"STATSD_PROTOCOL=sctp"}},
		{[]string{"STATSD_PORT=statsd"}},
		{[]string{"REDIS_POOL_ON_EMPTY_BEHAVIOR=CREATE"}},
		{[]string{"LOG_LEVEL=loud"}},
		{[]string{"LOG_FORMAT=xml"}},
		{[]string{"GRPC_MAX_CONNECTION_AGE=soon"}},
		{[]string{"XDS_CLIENT_BACKOFF_JITTER=perhaps"}}, // an xDS one's value parses even with FILE
		{[]string{"EXTRA_TAGS=novalue"}},
		// The ones issue 33 names, whatever the table says.
		{[]string{"GRPC_SERVER_USE_TLS=true", "GRPC_SERVER_TLS_CERT=/nonexistent/cert.pem", "GRPC_SERVER_TLS_KEY=/nonexistent/key.pem"}},
		{[]string{"TRACING_ENABLED=true", "TRACING_EXPORTER_PROTOCOL=zipkin"}},
		{[]string{"TRACING_ENABLED=true", "TRACING_SAMPLING_RATE=2"}},
		// Two statistics sinks at once (USE_STATSD is true unless
		// false), as the reference refuses them.
		{[]string{"USE_PROMETHEUS=true"}},
		{[]string{"USE_DOG_STATSD=true"}},
		{[]string{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=perhaps"}},
		{[]string{"LOCAL_CACHE_SIZE_IN_BYTES=-1"}},
	}
	refused := 0
	for _, s := range settings.Table() {
		if s.Status == settings.Refused {
			cases = append(cases, refusal{[]string{s.Name + "=" + refusedValue(s)}})
			refused++
		}
	}
	if refused < 1 {
		t.Fatalf("the table has %d refused settings, want at least 1 (REDIS_HEALTH_CHECK_ACTIVE_CONNECTION)", refused)
	}
	for _, c := range cases {
		name, value, _ := strings.Cut(c.env[0], "=")
		if len(c.env) > 1 {
			name, value, _ = strings.Cut(c.env[1], "=")
		}
		t.Run(name, func(t *testing.T) {
			var out, errs bytes.Buffer
			// A server that nothing listens on: a start would fail
			// differently (exit 1, naming the connection).
			code := run(nil, env(append(c.env, "REDIS_SOCKET_TYPE=tcp", "REDIS_URL=127.0.0.1:1")...), &out, &errs)
			if code != 2 || !strings.Contains(errs.String(), name+`="`+value+`"`) {
				t.Errorf("%v: exit %d, %q; want 2 and %s=%q named", c.env, code, errs.String(), name, value)
			}
		})
	}
}
