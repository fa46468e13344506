package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/rls/settings"
)

// NewClient connects to the Redis or Valkey of the settings.
func NewClient(s settings.Settings) (rueidis.Client, error) {
	opt := rueidis.ClientOption{InitAddress: strings.Split(s.RedisURL, ","), DisableCache: true}
	if s.RedisType == "SINGLE" {
		opt.ForceSingleClient = true
		opt.InitAddress = opt.InitAddress[:1]
	}
	if s.RedisSocketType == "unix" {
		path := s.RedisURL
		opt.InitAddress = []string{path}
		opt.DialCtxFn = func(ctx context.Context, _ string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}
	}
	if s.RedisAuth != "" {
		if user, pass, ok := strings.Cut(s.RedisAuth, ":"); ok {
			opt.Username, opt.Password = user, pass
		} else {
			opt.Password = s.RedisAuth
		}
	}
	if s.RedisTLS {
		cfg := &tls.Config{InsecureSkipVerify: s.RedisTLSSkipVerify, MinVersion: tls.VersionTLS12}
		if s.RedisTLSCACert != "" {
			pem, err := os.ReadFile(s.RedisTLSCACert)
			if err != nil {
				return nil, fmt.Errorf("rls: REDIS_TLS_CACERT: %w", err)
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
				return nil, fmt.Errorf("rls: REDIS_TLS_CLIENT_CERT/KEY: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opt.TLSConfig = cfg
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		if s.RedisTLS {
			return nil, explainTLS(context.Background(), s, opt.InitAddress[0], err)
		}
		return nil, fmt.Errorf("rls: connecting to %s: %w", s.RedisURL, err)
	}
	return c, nil
}
