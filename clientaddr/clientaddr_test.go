package clientaddr

import (
	"errors"
	"strings"
	"testing"
)

// TestForwardedStrict: a Forwarded line is read strictly; one that does
// not parse ends the walk at the trusted proxy that wrote the lines to
// its right, so a client's unbalanced quote cannot swallow the element a
// proxy appended and leave the client's own for= as the key (issue 20,
// row 1).
func TestForwardedStrict(t *testing.T) {
	r, err := New(Options{TrustedProxies: []string{"10.0.0.0/8"}, ProxyHeader: "forwarded", IPv6Prefix: 128})
	if err != nil {
		t.Fatal(err)
	}
	const peer = "10.0.0.1:4711"
	for _, tt := range []struct {
		name   string
		fields []string
		want   string
	}{
		{"the issue's repro", []string{`for=9.9.9.9;x=", for=1.2.3.4`}, "10.0.0.1"},
		{"the repro on a line of its own", []string{`for=9.9.9.9;x="`, `for=1.2.3.4`}, "1.2.3.4"},
		{"an escaped quote keeps it open", []string{`for=9.9.9.9;x="\", for=1.2.3.4`}, "10.0.0.1"},
		{"a backslash outside quotes", []string{`for=9.9.9.9\, for=1.2.3.4`}, "10.0.0.1"},
		{"a quote closed by the proxy's value", []string{`for=9.9.9.9;x=", for="[2001:db8::1]:443"`}, "10.0.0.1"},
		{"a parameter twice", []string{`for=9.9.9.9;for=8.8.8.8, for=1.2.3.4`}, "10.0.0.1"},
		{"a pair without a value", []string{`for=, for=1.2.3.4`}, "10.0.0.1"},
		{"a control byte in quotes", []string{"for=\"9.9.9.9\x01\", for=1.2.3.4"}, "10.0.0.1"},
		{"well-formed", []string{`for=9.9.9.9;proto=https, for="1.2.3.4:80" ; by=10.0.0.1`}, "1.2.3.4"},
		{"empty elements", []string{`for=9.9.9.9,, ,for=1.2.3.4,`}, "1.2.3.4"},
		{"IPv6 bracketed", []string{`for="[2001:db8::7]"`}, "2001:db8::7"},
		{"IPv6 unbracketed", []string{`for="2001:db8::7"`}, "10.0.0.1"},
		{"IPv4 bracketed", []string{`for="[1.2.3.4]"`}, "10.0.0.1"},
		{"a zone", []string{`for="[fe80::1%eth0]"`}, "10.0.0.1"},
		{"an obfuscated port", []string{`for="1.2.3.4:_abc"`}, "1.2.3.4"},
		{"a port too long", []string{`for="1.2.3.4:123456"`}, "10.0.0.1"},
		{"a trusted hop then the client", []string{`for=6.6.6.6, for=1.2.3.4, for=10.0.0.9`}, "1.2.3.4"},
		{"a malformed line left of the client", []string{`for="`, `for=1.2.3.4, for=10.0.0.9`}, "1.2.3.4"},
		{"a malformed line after a trusted hop", []string{`for="`, `for=10.0.0.9`}, "10.0.0.9"},
	} {
		if got := r.Key(peer, tt.fields); got != tt.want {
			t.Errorf("%s: %q: key %s, want %s", tt.name, tt.fields, got, tt.want)
		}
	}
}

// TestNewNamesTheOption: each refused option is named.
func TestNewNamesTheOption(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{TrustedProxies: []string{"10.0.0.0/8", "10.0.0.0/33"}}, `TrustedProxies[1] "10.0.0.0/33"`},
		{Options{ProxyHeader: "X-Client-IP"}, `ProxyHeader "X-Client-IP"`},
		{Options{IPv4Prefix: 33}, "IPv4Prefix must be 1 to 32"},
		{Options{IPv6Prefix: -1}, "IPv6Prefix must be 1 to 128"},
	} {
		r, err := New(tt.opts)
		if r != nil || !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v): %v, %v; want an error saying %s", tt.opts, r, err, tt.want)
		}
	}
}

// TestMappedTrustedNetworks: a trusted network of IPv4-mapped IPv6
// addresses is the IPv4 network it maps from /96 on (::ffff:0.0.0.0/96 is
// every IPv4 address, /97 half of them); below /96 it is an IPv6 network,
// which holds no IPv4 peer (issue 36, row 5: /96 left mapped made every
// client behind such a proxy share the proxy's key).
func TestMappedTrustedNetworks(t *testing.T) {
	for _, tt := range []struct {
		trusted, peer, want string
	}{
		{"::ffff:0.0.0.0/95", "10.0.0.1", "10.0.0.1"},
		{"::ffff:0.0.0.0/95", "[::ffff:10.0.0.1]:80", "10.0.0.1"},
		{"::ffff:0.0.0.0/96", "10.0.0.1", "203.0.113.9"},
		{"::ffff:0.0.0.0/96", "[::ffff:10.0.0.1]:80", "203.0.113.9"},
		{"::ffff:0.0.0.0/96", "192.0.2.1:443", "203.0.113.9"},
		{"::ffff:0:0/96", "10.0.0.1", "203.0.113.9"},
		{"::ffff:0.0.0.0/97", "10.0.0.1", "203.0.113.9"},
		{"::ffff:0.0.0.0/97", "192.0.2.1", "192.0.2.1"},
		{"::ffff:10.0.0.0/104", "10.255.0.1", "203.0.113.9"},
		{"::ffff:10.0.0.0/104", "11.0.0.1", "11.0.0.1"},
		{"::ffff:10.0.0.1/128", "10.0.0.1", "203.0.113.9"},
		{"::ffff:10.0.0.1", "10.0.0.1", "203.0.113.9"},
	} {
		r, err := New(Options{TrustedProxies: []string{tt.trusted}})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Key(tt.peer, []string{"203.0.113.9"}); got != tt.want {
			t.Errorf("trusted %s, peer %s: key %s, want %s", tt.trusted, tt.peer, got, tt.want)
		}
	}
}

// TestGroupFormatsAsNetip: keys of IPv6 networks are written as netip
// writes them: a single zero group stays "0" (issue 36, row 4: Node wrote
// "::" for it), the first longest run of zeros is "::".
func TestGroupFormatsAsNetip(t *testing.T) {
	for _, tt := range []struct {
		addr string
		bits int
		want string
	}{
		{"2001:db8:0:1:1:1:1:1", 128, "2001:db8:0:1:1:1:1:1"},
		{"2001:db8:0:1:1:1:1:1", 80, "2001:db8:0:1:1::/80"},
		{"2001:db8:1:1:1:1:1:1", 112, "2001:db8:1:1:1:1:1:0/112"},
		{"2001:db8:0:0:1:0:0:1", 128, "2001:db8::1:0:0:1"},
		{"1:0:1:0:1:0:1:0", 128, "1:0:1:0:1:0:1:0"},
	} {
		r, err := New(Options{IPv6Prefix: tt.bits})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Key("["+tt.addr+"]:443", nil); got != tt.want {
			t.Errorf("%s /%d: key %s, want %s", tt.addr, tt.bits, got, tt.want)
		}
	}
}
