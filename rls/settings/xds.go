package settings

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/ratelua/ratelua/rls/xds"
)

// The values of CONFIG_TYPE.
const (
	// ConfigFile reads the configuration directory's files.
	ConfigFile = "FILE"
	// ConfigXDS takes the configuration from an xDS server.
	ConfigXDS = "GRPC_XDS_SOTW"
)

// XDSSettings are the xDS client's settings, read with
// CONFIG_TYPE=GRPC_XDS_SOTW only.
type XDSSettings struct {
	ServerURL            string            // CONFIG_GRPC_XDS_SERVER_URL
	NodeID               string            // CONFIG_GRPC_XDS_NODE_ID
	NodeMetadata         map[string]string // CONFIG_GRPC_XDS_NODE_METADATA
	Headers              map[string]string // CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS
	ConnectRetryInterval time.Duration     // CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL
	// UseTLS (CONFIG_GRPC_XDS_SERVER_USE_TLS) connects with TLS, the
	// server verified with CACert (CONFIG_GRPC_XDS_SERVER_TLS_CACERT) and
	// SAN (CONFIG_GRPC_XDS_SERVER_TLS_SAN), the client's certificate from
	// ClientCert and ClientKey (CONFIG_GRPC_XDS_CLIENT_TLS_CERT, _KEY).
	UseTLS                bool
	ClientCert, ClientKey string
	CACert, SAN           string
	Backoff               xds.Backoff // XDS_CLIENT_BACKOFF_*
	MaxMsgSize            int         // XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES
}

// xdsOnly reports whether name is read only with CONFIG_TYPE=GRPC_XDS_SOTW.
func xdsOnly(name string) bool {
	return name == "FORCE_START_WITHOUT_INITIAL_CONFIG" || strings.HasPrefix(name, "CONFIG_GRPC_XDS_") || strings.HasPrefix(name, "XDS_CLIENT_")
}

// xdsUnused lists the xDS settings given while CONFIG_TYPE is FILE.
func (r *envReader) xdsUnused() []UnusedSetting {
	var unused []UnusedSetting
	for _, t := range Table() {
		if v := r.getenv(t.Name); v != "" && xdsOnly(t.Name) {
			unused = append(unused, UnusedSetting{Name: t.Name, Value: v, Why: "read only with CONFIG_TYPE=GRPC_XDS_SOTW"})
		}
	}
	return unused
}

// xds reads and checks the xDS client's settings.
func (r *envReader) xds() XDSSettings {
	x := XDSSettings{
		ServerURL:            r.str("CONFIG_GRPC_XDS_SERVER_URL"),
		NodeID:               r.str("CONFIG_GRPC_XDS_NODE_ID"),
		Headers:              r.strmap("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS"),
		ConnectRetryInterval: r.duration("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL"),
		UseTLS:               r.bool("CONFIG_GRPC_XDS_SERVER_USE_TLS"),
		ClientCert:           r.str("CONFIG_GRPC_XDS_CLIENT_TLS_CERT"),
		ClientKey:            r.str("CONFIG_GRPC_XDS_CLIENT_TLS_KEY"),
		CACert:               r.str("CONFIG_GRPC_XDS_SERVER_TLS_CACERT"),
		SAN:                  r.str("CONFIG_GRPC_XDS_SERVER_TLS_SAN"),
		Backoff: xds.Backoff{
			Initial:      r.duration("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL"),
			Max:          r.duration("XDS_CLIENT_BACKOFF_MAX_INTERVAL"),
			RandomFactor: r.float("XDS_CLIENT_BACKOFF_RANDOM_FACTOR"),
			Jitter:       r.bool("XDS_CLIENT_BACKOFF_JITTER"),
		},
	}
	if v := r.str("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES"); v != "" {
		x.MaxMsgSize = r.int("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES")
	}
	md, err := xds.ParseNodeMetadata(r.str("CONFIG_GRPC_XDS_NODE_METADATA"))
	if err != nil {
		r.fail("CONFIG_GRPC_XDS_NODE_METADATA", r.getenv("CONFIG_GRPC_XDS_NODE_METADATA"), "must be key=value pairs, comma-separated")
	}
	x.NodeMetadata = md
	if x.ServerURL == "" {
		r.fail("CONFIG_GRPC_XDS_SERVER_URL", "", "must name the xDS server, such as localhost:18000")
	}
	if x.ConnectRetryInterval <= 0 {
		r.fail("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", x.ConnectRetryInterval.String(), "must be above 0")
	}
	if x.Backoff.Initial <= 0 {
		r.fail("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", x.Backoff.Initial.String(), "must be above 0")
	}
	if x.Backoff.Max < x.Backoff.Initial {
		r.fail("XDS_CLIENT_BACKOFF_MAX_INTERVAL", x.Backoff.Max.String(), "must be at least XDS_CLIENT_BACKOFF_INITIAL_INTERVAL ("+x.Backoff.Initial.String()+")")
	}
	if !(x.Backoff.RandomFactor >= 0 && x.Backoff.RandomFactor <= 1) {
		r.fail("XDS_CLIENT_BACKOFF_RANDOM_FACTOR", r.getenv("XDS_CLIENT_BACKOFF_RANDOM_FACTOR"), "must be a share from 0 to 1, such as 0.5")
	}
	if x.MaxMsgSize < 0 {
		r.fail("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", strconv.Itoa(x.MaxMsgSize), "must be 0 (gRPC's default, 4 MiB) or a number of bytes above 0")
	}
	if x.UseTLS {
		switch {
		case x.ClientCert != "" && x.ClientKey == "":
			r.fail("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", "", "must be given with CONFIG_GRPC_XDS_CLIENT_TLS_CERT (the client certificate's key)")
		case x.ClientCert == "" && x.ClientKey != "":
			r.fail("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "", "must be given with CONFIG_GRPC_XDS_CLIENT_TLS_KEY (the client's certificate)")
		}
		if _, err := xds.TLSConfig("", "", x.CACert, ""); err != nil {
			r.fail("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", x.CACert, err.Error())
		}
		if x.ClientCert != "" && x.ClientKey != "" {
			if _, err := xds.TLSConfig(x.ClientCert, x.ClientKey, "", ""); err != nil {
				r.fail("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", x.ClientCert, err.Error())
			}
		}
	}
	return x
}

// strmap reads name as envconfig reads a map: key:value pairs,
// comma-separated ("" is empty).
func (r *envReader) strmap(name string) map[string]string {
	v := r.str(name)
	m := map[string]string{}
	if v == "" {
		return m
	}
	for _, pair := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(pair, ":")
		if !ok {
			r.fail(name, v, "must be key:value pairs, comma-separated")
			return m
		}
		m[k] = val
	}
	return m
}

// XDSOptions are the options of the xDS client (xds.Run) the settings
// give, logging to log.
func (s Settings) XDSOptions(log *slog.Logger) (xds.Options, error) {
	o := xds.Options{
		ServerURL: s.XDS.ServerURL, NodeID: s.XDS.NodeID, NodeMetadata: s.XDS.NodeMetadata,
		Headers: s.XDS.Headers, ConnectRetryInterval: s.XDS.ConnectRetryInterval,
		Backoff: s.XDS.Backoff, MaxMsgSize: s.XDS.MaxMsgSize, Log: log,
	}
	if s.XDS.UseTLS {
		c, err := xds.TLSConfig(s.XDS.ClientCert, s.XDS.ClientKey, s.XDS.CACert, s.XDS.SAN)
		if err != nil {
			return o, err
		}
		o.TLS = c
	}
	return o, nil
}
