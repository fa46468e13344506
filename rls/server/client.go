package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/rls/settings"
)

// NewClient connects to the main Redis or Valkey deployment of the
// settings (REDIS_*).
func NewClient(s settings.Settings) (rueidis.Client, error) {
	return NewTargetClient(s, s.Redis())
}

// NewTargetClient connects to the deployment t (REDIS_* or
// REDIS_PERSECOND_*), with the TLS files of s (REDIS_TLS_*) if t.TLS: a
// single node, a cluster through its seed nodes, or the master that t's
// sentinels name (followed through a failover).
func NewTargetClient(s settings.Settings, t settings.RedisTarget) (rueidis.Client, error) {
	opt := rueidis.ClientOption{InitAddress: strings.Split(t.URL, ","), DisableCache: true}
	switch t.Type {
	case "SINGLE":
		opt.ForceSingleClient = true
		opt.InitAddress = opt.InitAddress[:1]
	case "SENTINEL":
		master, sentinels := t.Sentinel()
		opt.InitAddress = sentinels
		// The master is followed on the sentinels' +switch-master, and
		// asked again every few seconds (rueidis's advice: a missed event
		// would otherwise bind the client to the old master).
		opt.Sentinel = rueidis.SentinelOption{MasterSet: master, TopologyRefreshInterval: 5 * time.Second}
		opt.Sentinel.Username, opt.Sentinel.Password = splitAuth(t.SentinelAuth)
	}
	if t.SocketType == "unix" && t.Type != "SENTINEL" {
		path := t.URL
		opt.InitAddress = []string{path}
		opt.DialCtxFn = func(ctx context.Context, _ string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}
	}
	opt.Username, opt.Password = splitAuth(t.Auth)
	if t.TLS {
		cfg, err := redisTLS(s, t)
		if err != nil {
			return nil, err
		}
		opt.TLSConfig = cfg
		opt.Sentinel.TLSConfig = cfg
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		if t.TLS && t.Type != "SENTINEL" {
			return nil, explainTLS(context.Background(), t, opt.InitAddress[0], err)
		}
		return nil, fmt.Errorf("rls: connecting to %s (%s_URL): %w", t.URL, t.Prefix, err)
	}
	return c, nil
}

// splitAuth is a REDIS_AUTH's user and password: user:password, or a
// password alone.
func splitAuth(auth string) (user, pass string) {
	if u, p, ok := strings.Cut(auth, ":"); ok {
		return u, p
	}
	return "", auth
}

// redisTLS is the TLS configuration of REDIS_TLS_*, which the reference
// uses for both deployments.
func redisTLS(s settings.Settings, t settings.RedisTarget) (*tls.Config, error) {
	cfg := &tls.Config{InsecureSkipVerify: s.RedisTLSSkipVerify, MinVersion: tls.VersionTLS12}
	if s.RedisTLSCACert != "" {
		pem, err := os.ReadFile(s.RedisTLSCACert)
		if err != nil {
			return nil, fmt.Errorf("rls: REDIS_TLS_CACERT (for %s_TLS): %w", t.Prefix, err)
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
			return nil, fmt.Errorf("rls: REDIS_TLS_CLIENT_CERT/KEY (for %s_TLS): %w", t.Prefix, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
