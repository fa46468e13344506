package xds

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// ParseNodeMetadata reads CONFIG_GRPC_XDS_NODE_METADATA: comma-separated
// key=value pairs, such as "cluster=edge,zone=a" (a value may hold '=').
// The reference skips a pair without '='; here it is an error naming the
// pair, so that metadata is never dropped unseen.
func ParseNodeMetadata(s string) (map[string]string, error) {
	m := map[string]string{}
	if s == "" {
		return m, nil
	}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: node metadata %q: the pair %q is not key=value", ErrOptions, s, pair)
		}
		m[k] = v
	}
	return m, nil
}

// TLSConfig is the client's TLS for CONFIG_GRPC_XDS_SERVER_USE_TLS: the
// server's certificate verified with the CA in caFile
// (CONFIG_GRPC_XDS_SERVER_TLS_CACERT) or the system's roots, and
// the name san (CONFIG_GRPC_XDS_SERVER_TLS_SAN; the URL's host when
// empty), and the client's certificate from certFile and keyFile
// (CONFIG_GRPC_XDS_CLIENT_TLS_CERT and _KEY) when both are given.
func TLSConfig(certFile, keyFile, caFile, san string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: san}
	switch {
	case certFile != "" && keyFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate %s and key %s: %w", ErrOptions, certFile, keyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	case certFile != "" || keyFile != "":
		return nil, fmt.Errorf("%w: a client certificate needs both its certificate and its key (given %q and %q)", ErrOptions, certFile, keyFile)
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: server CA: %w", ErrOptions, err)
		}
		// The system's roots and the CA, as the reference trusts.
		pool, _ := x509.SystemCertPool()
		if pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: server CA %s holds no PEM certificate", ErrOptions, caFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}
