package ratehttp_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/ratehttp"
)

// noClient is a ratelua.Client for tests that never call the server.
type noClient struct{}

func (noClient) Run(context.Context, ratelua.Call, []int64) error {
	return errors.New("noClient: not for calls")
}

// oneLimit is a limit on noClient.
func oneLimit(t testing.TB) ratehttp.Limit {
	t.Helper()
	l, err := ratelua.NewZSetLog(noClient{}, ratelua.Options{}, ratelua.Log{Max: 1, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return ratehttp.Limit{Limiter: l, Name: "test"}
}

func middleware(t *testing.T, opts ratehttp.Options) *ratehttp.Middleware {
	t.Helper()
	m, err := ratehttp.New(opts, oneLimit(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// request is a request from peer with header fields ("Name: value").
func request(peer string, fields ...string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = peer
	for _, f := range fields {
		name, value, _ := strings.Cut(f, ": ")
		r.Header.Add(name, value)
	}
	return r
}

var trusted = []string{"10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.254"}

// TestClientKeyBehindProxies: the proxy fields are read only from a trusted
// peer, from the right, and the first address that is not a trusted proxy
// is the client; a value that is not an address stops the search at the
// trusted proxy that wrote it.
func TestClientKeyBehindProxies(t *testing.T) {
	const peer, proxy = "203.0.113.9:5555", "10.0.0.1:443"
	for _, tt := range []struct {
		name, header string // header "" means X-Forwarded-For
		peer         string
		fields       []string
		want         string
	}{
		// An untrusted peer: nothing it writes counts.
		{"untrusted, one address", "", peer, []string{"X-Forwarded-For: 198.51.100.7"}, "203.0.113.9"},
		{"untrusted, a trusted-looking address", "", peer, []string{"X-Forwarded-For: 10.0.0.2"}, "203.0.113.9"},
		{"untrusted, four addresses", "", peer, []string{"X-Forwarded-For: 1.1.1.1, 6.6.6.6, 198.51.100.7, 10.0.0.2"}, "203.0.113.9"},
		{"untrusted, IPv6", "", "[2001:db8:1::5]:80", []string{"X-Forwarded-For: 2001:db8:2::7"}, "2001:db8:1::5"},
		{"untrusted, Forwarded", "Forwarded", peer, []string{"Forwarded: for=198.51.100.7"}, "203.0.113.9"},
		{"untrusted, X-Real-IP", "X-Real-IP", peer, []string{"X-Real-IP: 198.51.100.7"}, "203.0.113.9"},
		// A trusted peer: the rightmost untrusted address.
		{"trusted, no field", "", proxy, nil, "10.0.0.1"},
		{"trusted, one address", "", proxy, []string{"X-Forwarded-For: 198.51.100.7"}, "198.51.100.7"},
		{"trusted, a spoofed leftmost", "", proxy, []string{"X-Forwarded-For: 6.6.6.6, 198.51.100.7"}, "198.51.100.7"},
		{"trusted, three with a proxy hop", "", proxy, []string{"X-Forwarded-For: 6.6.6.6, 198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
		{"trusted, four", "", proxy, []string{"X-Forwarded-For: 1.1.1.1, 6.6.6.6, 198.51.100.7, 10.0.0.2"}, "198.51.100.7"},
		{"trusted, four, a single-address proxy", "", proxy, []string{"X-Forwarded-For: 1.1.1.1, 6.6.6.6, 198.51.100.7, 192.0.2.254"}, "198.51.100.7"},
		{"trusted, all proxies", "", proxy, []string{"X-Forwarded-For: 10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"trusted, two field lines", "", proxy, []string{"X-Forwarded-For: 6.6.6.6", "X-Forwarded-For: 198.51.100.7"}, "198.51.100.7"},
		{"trusted, with a port", "", proxy, []string{"X-Forwarded-For: 198.51.100.7:8080"}, "198.51.100.7"},
		{"trusted, IPv6", "", proxy, []string{"X-Forwarded-For: 2001:db8:1::7"}, "2001:db8:1::7"},
		{"trusted, IPv6 with a port", "", proxy, []string{"X-Forwarded-For: [2001:db8:1::7]:443"}, "2001:db8:1::7"},
		{"trusted, IPv6 with a zone", "", proxy, []string{"X-Forwarded-For: fe80::1%eth0"}, "fe80::1"},
		{"trusted, IPv4-mapped", "", proxy, []string{"X-Forwarded-For: ::ffff:198.51.100.7"}, "198.51.100.7"},
		{"trusted IPv6 peer", "", "[2001:db8:ffff::2]:443", []string{"X-Forwarded-For: 6.6.6.6, 2001:db8:1::9"}, "2001:db8:1::9"},
		{"trusted, IPv6 proxy hop", "", proxy, []string{"X-Forwarded-For: 6.6.6.6, 2001:db8:ffff::1"}, "6.6.6.6"},
		{"trusted, garbage on the left", "", proxy, []string{"X-Forwarded-For: garbage, 198.51.100.7"}, "198.51.100.7"},
		{"trusted, garbage from the peer", "", proxy, []string{"X-Forwarded-For: 198.51.100.7, garbage"}, "10.0.0.1"},
		{"trusted, garbage from a proxy hop", "", proxy, []string{"X-Forwarded-For: 198.51.100.7, unknown, 10.0.0.2"}, "10.0.0.2"},
		{"trusted, empty", "", proxy, []string{"X-Forwarded-For: "}, "10.0.0.1"},
		{"trusted, empty hops", "", proxy, []string{"X-Forwarded-For: , ,"}, "10.0.0.1"},
		{"trusted, out of range", "", proxy, []string{"X-Forwarded-For: 999.1.1.1"}, "10.0.0.1"},
		{"trusted, IPv4 in brackets", "", proxy, []string{"X-Forwarded-For: [198.51.100.7]"}, "10.0.0.1"},
		{"trusted, a bad port", "", proxy, []string{"X-Forwarded-For: [2001:db8::7]:http"}, "10.0.0.1"},
		{"trusted, a hostname", "", proxy, []string{"X-Forwarded-For: client.example"}, "10.0.0.1"},
		{"trusted, the wrong field", "", proxy, []string{"X-Real-IP: 198.51.100.7", "Forwarded: for=198.51.100.8"}, "10.0.0.1"},
		// Forwarded (RFC 7239).
		{"Forwarded, one", "Forwarded", proxy, []string{"Forwarded: for=198.51.100.7"}, "198.51.100.7"},
		{"Forwarded, quoted IPv6 and port", "Forwarded", proxy, []string{`Forwarded: for="[2001:db8:1::7]:4711"`}, "2001:db8:1::7"},
		{"Forwarded, spoofed leftmost", "Forwarded", proxy, []string{"Forwarded: for=6.6.6.6, for=198.51.100.7;proto=https"}, "198.51.100.7"},
		{"Forwarded, parameters in any order", "Forwarded", proxy, []string{`Forwarded: proto=https;FOR="198.51.100.7";by=10.0.0.1`}, "198.51.100.7"},
		{"Forwarded, four", "Forwarded", proxy, []string{"Forwarded: for=1.1.1.1, for=6.6.6.6, for=198.51.100.7, for=10.0.0.2"}, "198.51.100.7"},
		{"Forwarded, unknown from the peer", "Forwarded", proxy, []string{"Forwarded: for=198.51.100.7, for=unknown"}, "10.0.0.1"},
		{"Forwarded, obfuscated on the left", "Forwarded", proxy, []string{"Forwarded: for=_hidden, for=198.51.100.7"}, "198.51.100.7"},
		{"Forwarded, no for", "Forwarded", proxy, []string{"Forwarded: proto=https"}, "10.0.0.1"},
		{"Forwarded, a comma in quotes", "Forwarded", proxy, []string{`Forwarded: for="6.6.6.6, 198.51.100.7"`}, "10.0.0.1"},
		{"Forwarded ignores X-Forwarded-For", "Forwarded", proxy, []string{"X-Forwarded-For: 198.51.100.7"}, "10.0.0.1"},
		// X-Real-IP.
		{"X-Real-IP", "X-Real-IP", proxy, []string{"X-Real-IP: 198.51.100.7"}, "198.51.100.7"},
		{"X-Real-IP, garbage", "X-Real-IP", proxy, []string{"X-Real-IP: garbage"}, "10.0.0.1"},
		{"X-Real-IP ignores X-Forwarded-For", "x-real-ip", proxy, []string{"X-Forwarded-For: 198.51.100.7"}, "10.0.0.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := middleware(t, ratehttp.Options{TrustedProxies: trusted, ProxyHeader: tt.header, IPv6Prefix: 128})
			if got := m.ClientKey(request(tt.peer, tt.fields...)); got != tt.want {
				t.Errorf("ClientKey = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestClientKeyGrouping: IPv6 by /64 and IPv4 by address by default, or
// by the configured prefix lengths.
func TestClientKeyGrouping(t *testing.T) {
	for _, tt := range []struct {
		v4, v6 int
		peer   string
		want   string
	}{
		{0, 0, "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:1", "2001:db8:1:2::/64"},
		{0, 0, "[2001:db8:1:2::1]:1", "2001:db8:1:2::/64"},
		{0, 0, "192.0.2.1:1", "192.0.2.1"},
		{0, 0, "[::ffff:192.0.2.1]:1", "192.0.2.1"},
		{24, 48, "192.0.2.77:1", "192.0.2.0/24"},
		{24, 48, "[2001:db8:1:2::1]:1", "2001:db8:1::/48"},
		{0, 128, "[2001:db8:1:2::1]:1", "2001:db8:1:2::1"},
		{0, 0, "@", "@"}, // a Unix socket: the RemoteAddr as it is
	} {
		m := middleware(t, ratehttp.Options{IPv4Prefix: tt.v4, IPv6Prefix: tt.v6})
		if got := m.ClientKey(request(tt.peer)); got != tt.want {
			t.Errorf("IPv4Prefix %d IPv6Prefix %d, peer %s: %q, want %q", tt.v4, tt.v6, tt.peer, got, tt.want)
		}
	}
}

// TestSpoofingNeverChangesTheKey: from an untrusted peer, random proxy
// fields (addresses, lists, garbage) never change the key.
func TestSpoofingNeverChangesTheKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	pieces := []string{"198.51.100.7", "10.0.0.2", "2001:db8::1", "[2001:db8::1]:80", "unknown", "for=1.2.3.4", `for="[::1]"`, ",", ";", " ", "\"", "::ffff:10.0.0.1", "192.0.2.254", "garbage"}
	for _, header := range []string{"X-Forwarded-For", "Forwarded", "X-Real-IP"} {
		m := middleware(t, ratehttp.Options{TrustedProxies: trusted, ProxyHeader: header})
		for range 2000 {
			var v strings.Builder
			for range rng.IntN(8) {
				v.WriteString(pieces[rng.IntN(len(pieces))])
			}
			peer := "203.0.113.9:1"
			want := "203.0.113.9"
			if rng.IntN(2) == 0 {
				peer, want = "[2001:db8:5::9]:1", "2001:db8:5::/64"
			}
			r := request(peer, header+": "+v.String(), "X-Forwarded-For: "+v.String())
			if got := m.ClientKey(r); got != want {
				t.Fatalf("%s: %q from untrusted %s gave key %q, want %q", header, v.String(), peer, got, want)
			}
		}
	}
}
