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
