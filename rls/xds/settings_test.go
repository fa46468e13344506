package xds_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	confv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/ratelua/ratelua/rls/xds"
	"github.com/ratelua/ratelua/rls/xds/xdstest"
)

// TestParseNodeMetadata: key=value pairs, comma-separated; a pair without
// '=' is an error naming it.
func TestParseNodeMetadata(t *testing.T) {
	m, err := xds.ParseNodeMetadata("cluster=edge,expr=a=b,empty=")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["cluster"] != "edge" || m["expr"] != "a=b" || m["empty"] != "" {
		t.Errorf("%v", m)
	}
	if m, err := xds.ParseNodeMetadata(""); err != nil || len(m) != 0 {
		t.Errorf("empty: %v %v", m, err)
	}
	for _, bad := range []string{"zone:a", "a=1,,b=2", "=x"} {
		if _, err := xds.ParseNodeMetadata(bad); !errors.Is(err, xds.ErrOptions) {
			t.Errorf("%q: %v, want ErrOptions", bad, err)
		}
	}
}

// pki is a CA and the files of a server's and a client's certificates
// it signed.
type pki struct {
	ca                    *x509.CertPool
	caFile                string
	serverCert, serverKey string
	clientCert, clientKey string
	serverTLS             tls.Certificate
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	issue := func(name string, serial int64, usage x509.ExtKeyUsage, dns []string) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			DNSNames: dns, ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(key)
		return write(name+".crt", "CERTIFICATE", der), write(name+".key", "EC PRIVATE KEY", kder)
	}
	p := pki{ca: x509.NewCertPool(), caFile: write("ca.crt", "CERTIFICATE", caDER)}
	p.ca.AddCert(ca)
	p.serverCert, p.serverKey = issue("server", 2, x509.ExtKeyUsageServerAuth, []string{"xds.test"})
	p.clientCert, p.clientKey = issue("client", 3, x509.ExtKeyUsageClientAuth, nil)
	p.serverTLS, err = tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMutualTLS: with TLSConfig's configuration (the server verified by
// the CA file and the name CONFIG_GRPC_XDS_SERVER_TLS_SAN gives, the
// client's certificate from its files), the client takes its updates
// from a server that requires a client certificate, as Envoy Gateway's
// does.
func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{p.serverTLS}, ClientCAs: p.ca,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	srv := xdstest.Start(t, grpc.Creds(creds))
	srv.Set(t, "n", "v1", config("a", "alpha", "user", 1, confv3.RateLimitUnit_SECOND))
	c, err := xds.TLSConfig(p.clientCert, p.clientKey, p.caFile, "xds.test")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	run(t, xds.Options{ServerURL: srv.Addr, NodeID: "n", TLS: c}, rec)
	if u := rec.next(t); u.Version != "v1" {
		t.Fatalf("update %q, want v1", u.Version)
	}
	srv.WaitACK(t, "v1")
}

// TestTLSConfigRefused: files that cannot make a TLS configuration are
// an error naming them.
func TestTLSConfigRefused(t *testing.T) {
	p := newPKI(t)
	for name, c := range map[string]struct {
		cert, key, ca string
		want          string
	}{
		"cert alone":   {p.clientCert, "", "", "both its certificate and its key"},
		"key alone":    {"", p.clientKey, "", "both its certificate and its key"},
		"missing cert": {filepath.Join(t.TempDir(), "none.crt"), p.clientKey, "", "none.crt"},
		"missing ca":   {"", "", filepath.Join(t.TempDir(), "none-ca.crt"), "none-ca.crt"},
		"ca not pem":   {"", "", p.clientKey, "holds no PEM certificate"},
	} {
		_, err := xds.TLSConfig(c.cert, c.key, c.ca, "")
		if !errors.Is(err, xds.ErrOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrOptions naming %q", name, err, c.want)
		}
	}
}
