package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/ratelua/ratelua/rls/settings"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate signed by ca for dns names (and 127.0.0.1),
// for usage, as PEM certificate and key.
func (ca testCA) issue(t *testing.T, serial int64, usage x509.ExtKeyUsage, dns ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: dns[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: dns, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// callTLS makes one ShouldRateLimit call over TLS, the server verified by
// ca, presenting client (if not nil); it returns the call's error.
func callTLS(t *testing.T, port int, ca testCA, client *tls.Certificate) error {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	tc := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	if client != nil {
		tc.Certificates = []tls.Certificate{*client}
	}
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(port), grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "d",
		Descriptors: []*rlpb.RateLimitDescriptor{{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}})
	return err
}

// answered reports whether the call was answered (the configuration
// allows it) rather than refused with its connection.
func answered(err error) bool {
	return err == nil
}

// TestGRPCServerTLS: with GRPC_SERVER_USE_TLS the server serves over TLS;
// with GRPC_CLIENT_TLS_CACERT a client without a certificate is refused
// and one with a certificate of the CA answered; with GRPC_CLIENT_TLS_SAN
// a certificate for another name is refused, as the reference does.
func TestGRPCServerTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t)
	srvCert, srvKey := ca.issue(t, 2, x509.ExtKeyUsageServerAuth, "localhost")
	cliPEM, cliKeyPEM := ca.issue(t, 3, x509.ExtKeyUsageClientAuth, "client.example")
	otherPEM, otherKeyPEM := ca.issue(t, 4, x509.ExtKeyUsageClientAuth, "other.example")
	cli, err := tls.X509KeyPair(cliPEM, cliKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	other, err := tls.X509KeyPair(otherPEM, otherKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	base := settings.GRPCTLSSettings{UseTLS: true,
		Cert: writeFile(t, dir, "server.pem", srvCert), Key: writeFile(t, dir, "server.key", srvKey)}
	caFile := writeFile(t, dir, "ca.pem", ca.pem)

	cases := []struct {
		name              string
		caCert, san       string
		none, good, wrong bool // answered without a client certificate, with client.example's, with other.example's
	}{
		{"server TLS only", "", "", true, true, true},
		{"client CA", caFile, "", false, true, true},
		{"client CA and SAN", caFile, "client.example", false, true, false},
		{"SAN without CA", "", "client.example", true, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := base
			g.ClientCACert, g.ClientSAN = c.caCert, c.san
			srv, cfg, _ := runServer(t, settings.Settings{GRPCTLS: g})
			install(t, cfg, "d.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 100}\n")
			pollHealth(t, srv, "the configuration loaded", func(code int, _ string) bool {
				return code == 200 && hasRule(srv.Service().Config(), "d.k")
			})
			port := srv.settings.GRPCPort
			for _, k := range []struct {
				what string
				cert *tls.Certificate
				want bool
			}{{"no client certificate", nil, c.none}, {"client.example", &cli, c.good}, {"other.example", &other, c.wrong}} {
				err := callTLS(t, port, ca, k.cert)
				if answered(err) != k.want {
					t.Errorf("%s: error %v, want answered=%v", k.what, err, k.want)
				}
			}
		})
	}
}
