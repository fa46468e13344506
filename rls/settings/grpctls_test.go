package settings

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGRPCTLSBadFilesStopTheStart: with GRPC_SERVER_USE_TLS=true, a
// missing certificate or key, a file that does not load, or a client CA
// file without a certificate stops the start, naming the variable.
func TestGRPCTLSBadFilesStopTheStart(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "GRPC_SERVER_TLS_CERT"},
		{map[string]string{"GRPC_SERVER_TLS_CERT": junk}, "GRPC_SERVER_TLS_CERT"},
		{map[string]string{"GRPC_SERVER_TLS_CERT": junk, "GRPC_SERVER_TLS_KEY": junk}, "GRPC_SERVER_TLS_CERT"},
		{map[string]string{"GRPC_SERVER_TLS_CERT": filepath.Join(dir, "none"), "GRPC_SERVER_TLS_KEY": junk}, "GRPC_SERVER_TLS_CERT"},
	} {
		c.env["GRPC_SERVER_USE_TLS"] = "true"
		_, err := FromEnv(func(name string) string { return c.env[name] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.env, err, c.want)
		}
	}
	cert, key := selfSigned(t, dir)
	env := map[string]string{"GRPC_SERVER_USE_TLS": "true", "GRPC_SERVER_TLS_CERT": cert, "GRPC_SERVER_TLS_KEY": key}
	if _, err := FromEnv(func(name string) string { return env[name] }); err != nil {
		t.Fatalf("a good certificate and key: %v", err)
	}
	for _, ca := range []string{junk, filepath.Join(dir, "none")} {
		env["GRPC_CLIENT_TLS_CACERT"] = ca
		_, err := FromEnv(func(name string) string { return env[name] })
		if err == nil || !strings.Contains(err.Error(), "GRPC_CLIENT_TLS_CACERT") {
			t.Errorf("CA %s: error %v, want one naming GRPC_CLIENT_TLS_CACERT", ca, err)
		}
	}
	if _, err := FromEnv(func(string) string { return "" }); err != nil {
		t.Fatalf("defaults (TLS off): %v", err)
	}
}

// selfSigned writes a self-signed certificate and its key into dir and
// returns their paths.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}
