package settings

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// getenv is a getenv of the given NAME=value pairs.
func getenv(kv ...string) func(string) string {
	return func(name string) string {
		for _, e := range kv {
			if n, v, _ := strings.Cut(e, "="); n == name {
				return v
			}
		}
		return ""
	}
}

// TestXDSSettings: with CONFIG_TYPE=GRPC_XDS_SOTW every xDS setting is
// read into Settings.XDS and the xDS client's options; the defaults are
// the reference's.
func TestXDSSettings(t *testing.T) {
	s, err := FromEnv(getenv("CONFIG_TYPE=grpc_xds_sotw",
		"CONFIG_GRPC_XDS_SERVER_URL=eg.envoy-gateway-system:18001", "CONFIG_GRPC_XDS_NODE_ID=envoy-gateway",
		"CONFIG_GRPC_XDS_NODE_METADATA=cluster=edge,zone=a", "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS=x-tenant:t1,x-b:2",
		"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL=1s", "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL=2s",
		"XDS_CLIENT_BACKOFF_MAX_INTERVAL=20s", "XDS_CLIENT_BACKOFF_RANDOM_FACTOR=0.25", "XDS_CLIENT_BACKOFF_JITTER=false",
		"XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES=8388608", "FORCE_START_WITHOUT_INITIAL_CONFIG=true"))
	if err != nil {
		t.Fatal(err)
	}
	x := s.XDS
	if s.ConfigType != ConfigXDS || !s.ForceStart || x.ServerURL != "eg.envoy-gateway-system:18001" || x.NodeID != "envoy-gateway" ||
		x.NodeMetadata["zone"] != "a" || x.NodeMetadata["cluster"] != "edge" || x.Headers["x-tenant"] != "t1" || x.Headers["x-b"] != "2" ||
		x.ConnectRetryInterval != time.Second || x.Backoff.Initial != 2*time.Second || x.Backoff.Max != 20*time.Second ||
		x.Backoff.RandomFactor != 0.25 || x.Backoff.Jitter || x.MaxMsgSize != 8<<20 || x.UseTLS {
		t.Errorf("settings %+v (type %s, force %v)", x, s.ConfigType, s.ForceStart)
	}
	o, err := s.XDSOptions(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if o.ServerURL != x.ServerURL || o.NodeID != x.NodeID || o.Backoff != x.Backoff || o.MaxMsgSize != x.MaxMsgSize || o.TLS != nil || len(o.Headers) != 2 ||
		o.NodeMetadata["zone"] != "a" || o.ConnectRetryInterval != time.Second {
		t.Errorf("options %+v", o)
	}

	d, err := FromEnv(getenv("CONFIG_TYPE=GRPC_XDS_SOTW"))
	if err != nil {
		t.Fatal(err)
	}
	if d.XDS.ServerURL != "localhost:18000" || d.XDS.NodeID != "default" || d.XDS.ConnectRetryInterval != 3*time.Second ||
		d.XDS.Backoff.Initial != 10*time.Second || d.XDS.Backoff.Max != time.Minute || d.XDS.Backoff.RandomFactor != 0.5 ||
		!d.XDS.Backoff.Jitter || d.XDS.MaxMsgSize != 0 || d.ForceStart {
		t.Errorf("defaults %+v", d.XDS)
	}
}

// TestXDSSettingsWithFileAreUnused: with CONFIG_TYPE=FILE (the default)
// an xDS setting given is not used, and the start says so once.
func TestXDSSettingsWithFileAreUnused(t *testing.T) {
	s, err := FromEnv(getenv("CONFIG_GRPC_XDS_SERVER_URL=xds:18000", "FORCE_START_WITHOUT_INITIAL_CONFIG=true"))
	if err != nil {
		t.Fatal(err)
	}
	if s.ConfigType != ConfigFile || s.ForceStart || s.XDS.ServerURL != "" {
		t.Errorf("type %s, force %v, xds %+v: want FILE and no xDS", s.ConfigType, s.ForceStart, s.XDS)
	}
	got := map[string]string{}
	for _, u := range s.Unused {
		got[u.Name] = u.Value + ": " + u.Why
	}
	for _, name := range []string{"CONFIG_GRPC_XDS_SERVER_URL", "FORCE_START_WITHOUT_INITIAL_CONFIG"} {
		if !strings.Contains(got[name], "CONFIG_TYPE=GRPC_XDS_SOTW") {
			t.Errorf("%s: %q, want it listed as unused without CONFIG_TYPE=GRPC_XDS_SOTW", name, got[name])
		}
	}
}

// TestXDSTLSSettingsRefused: a client certificate without its key, or
// its key without it, is refused at the start, naming the one missing.
func TestXDSTLSSettingsRefused(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"CONFIG_GRPC_XDS_CLIENT_TLS_CERT=/c.pem"}, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY"},
		{[]string{"CONFIG_GRPC_XDS_CLIENT_TLS_KEY=/k.pem"}, "CONFIG_GRPC_XDS_CLIENT_TLS_CERT"},
		{[]string{"CONFIG_GRPC_XDS_CLIENT_TLS_CERT=/nonexistent/c.pem", "CONFIG_GRPC_XDS_CLIENT_TLS_KEY=/nonexistent/k.pem"}, `CONFIG_GRPC_XDS_CLIENT_TLS_CERT="/nonexistent/c.pem"`},
	} {
		env := append([]string{"CONFIG_TYPE=GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_USE_TLS=true"}, c.env...)
		if _, err := FromEnv(getenv(env...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.env, err, c.want)
		}
	}
}
