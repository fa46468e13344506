package settings

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// GRPCTLSSettings are the gRPC server's TLS settings (GRPC_SERVER_USE_TLS,
// GRPC_SERVER_TLS_*, GRPC_CLIENT_TLS_*), applied as the reference applies
// them.
type GRPCTLSSettings struct {
	// UseTLS (GRPC_SERVER_USE_TLS) serves gRPC over TLS with the
	// certificate Cert and its key Key (GRPC_SERVER_TLS_CERT, _KEY).
	UseTLS    bool
	Cert, Key string
	// ClientCACert (GRPC_CLIENT_TLS_CACERT), when given, requires every
	// client to present a certificate verified by it (or by the system's
	// roots, as the reference pools them); without it no client
	// certificate is asked for.
	ClientCACert string
	// ClientSAN (GRPC_CLIENT_TLS_SAN), when given with ClientCACert, is
	// the name the client's certificate must hold, for client
	// authentication.
	ClientSAN string
}

// Config returns the server's TLS configuration, or an error naming the
// variable whose file is missing or bad.
func (g GRPCTLSSettings) Config() (*tls.Config, error) {
	if g.Cert == "" || g.Key == "" {
		return nil, errors.New("GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY must both be given with GRPC_SERVER_USE_TLS=true")
	}
	pair, err := tls.LoadX509KeyPair(g.Cert, g.Key)
	if err != nil {
		return nil, fmt.Errorf("GRPC_SERVER_TLS_CERT=%q, GRPC_SERVER_TLS_KEY=%q: %w", g.Cert, g.Key, err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.NoClientCert}
	if g.ClientCACert == "" {
		return c, nil
	}
	pem, err := os.ReadFile(g.ClientCACert)
	if err != nil {
		return nil, fmt.Errorf("GRPC_CLIENT_TLS_CACERT=%q: %w", g.ClientCACert, err)
	}
	pool, _ := x509.SystemCertPool()
	if pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("GRPC_CLIENT_TLS_CACERT=%q: no PEM certificate in the file", g.ClientCACert)
	}
	c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	if g.ClientSAN != "" {
		c.VerifyPeerCertificate = verifyClientSAN(pool, g.ClientSAN)
	}
	return c, nil
}

// verifyClientSAN checks, as the reference does, that each verified chain's
// client certificate holds the name san, for client authentication.
func verifyClientSAN(pool *x509.CertPool, san string) func([][]byte, [][]*x509.Certificate) error {
	return func(_ [][]byte, chains [][]*x509.Certificate) error {
		for _, chain := range chains {
			if len(chain) == 0 {
				return errors.New("rls: missing client certificate")
			}
			opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool(), DNSName: san,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
			for _, c := range chain[1:] {
				opts.Intermediates.AddCert(c)
			}
			if _, err := chain[0].Verify(opts); err != nil {
				return fmt.Errorf("rls: client certificate (GRPC_CLIENT_TLS_SAN=%q): %w", san, err)
			}
		}
		return nil
	}
}

// grpcTLS reads the gRPC server's TLS settings and refuses, naming the
// variable, files that cannot be loaded.
func (r *envReader) grpcTLS() GRPCTLSSettings {
	g := GRPCTLSSettings{UseTLS: r.bool("GRPC_SERVER_USE_TLS"),
		Cert: r.str("GRPC_SERVER_TLS_CERT"), Key: r.str("GRPC_SERVER_TLS_KEY"),
		ClientCACert: r.str("GRPC_CLIENT_TLS_CACERT"), ClientSAN: r.str("GRPC_CLIENT_TLS_SAN")}
	if !g.UseTLS {
		return g
	}
	if _, err := g.Config(); err != nil {
		name, value := "GRPC_SERVER_TLS_CERT", g.Cert
		if g.Cert != "" && g.Key != "" {
			if _, perr := tls.LoadX509KeyPair(g.Cert, g.Key); perr == nil {
				name, value = "GRPC_CLIENT_TLS_CACERT", g.ClientCACert
			}
		}
		r.fail(name, value, err.Error())
	}
	return g
}

// grpcTLSUnused lists the gRPC TLS files set while GRPC_SERVER_USE_TLS is
// false, which nothing reads.
func (r *envReader) grpcTLSUnused(g GRPCTLSSettings) []UnusedSetting {
	if g.UseTLS {
		return nil
	}
	var unused []UnusedSetting
	for _, name := range []string{"GRPC_SERVER_TLS_CERT", "GRPC_SERVER_TLS_KEY", "GRPC_CLIENT_TLS_CACERT", "GRPC_CLIENT_TLS_SAN"} {
		if v := r.getenv(name); v != "" {
			unused = append(unused, UnusedSetting{Name: name, Value: v, Why: "read only with GRPC_SERVER_USE_TLS=true"})
		}
	}
	return unused
}
