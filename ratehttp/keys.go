package ratehttp

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// KeyFunc maps a request to a limiter's event key; ok false means the limit
// does not apply to the request.
type KeyFunc func(r *http.Request) (key string, ok bool)

// ByHeader keys by the value of the request header name (an API key, a
// tenant id); a request without it is not limited by this limit.
func ByHeader(name string) KeyFunc {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) (string, bool) {
		v := r.Header.Get(name)
		return v, v != ""
	}
}

// ByContextValue keys by the string stored in the request's context under
// key, such as the user an authentication middleware put there; a request
// without one (or with an empty one) is not limited by this limit.
func ByContextValue(key any) KeyFunc {
	return func(r *http.Request) (string, bool) {
		v, ok := r.Context().Value(key).(string)
		return v, ok && v != ""
	}
}

// ClientKey returns the key of the request's client address, the default
// key of a Limit: the peer's address (RemoteAddr), or when the peer is a
// trusted proxy the rightmost address in its ProxyHeader that is not a
// trusted proxy, grouped by the IPv4 and IPv6 prefix lengths: "192.0.2.1",
// "2001:db8:1:2::/64". A RemoteAddr that holds no address (a Unix socket)
// is the key as it is.
func (m *Middleware) ClientKey(r *http.Request) string {
	addr, ok := m.clientAddr(r)
	if !ok {
		return r.RemoteAddr
	}
	bits := m.v6bits
	if addr.Is4() {
		bits = m.v4bits
	}
	if bits == addr.BitLen() {
		return addr.String()
	}
	return netip.PrefixFrom(addr, bits).Masked().String()
}

// clientAddr finds the client's address.
func (m *Middleware) clientAddr(r *http.Request) (netip.Addr, bool) {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok || !m.isTrusted(peer) {
		return peer, ok
	}
	values := r.Header.Values(m.proxyHeader)
	if len(values) == 0 {
		return peer, true
	}
	var hops []string
	if m.proxyHeader == "Forwarded" {
		hops = forwardedFor(values)
	} else {
		for _, v := range values {
			hops = append(hops, strings.Split(v, ",")...)
		}
	}
	// From the right: each hop was written by the proxy to its right (the
	// last by the peer). The first that is not a trusted proxy is the
	// client; a hop that is not an address ends the search at the trusted
	// proxy that wrote it.
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		addr, ok := parseAddr(hops[i])
		if !ok {
			return client, true
		}
		client = addr
		if !m.isTrusted(addr) {
			return addr, true
		}
	}
	return client, true
}

// isTrusted reports whether addr is a trusted proxy.
func (m *Middleware) isTrusted(addr netip.Addr) bool {
	for _, p := range m.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// parseAddr reads an address as proxies write it: "192.0.2.1",
// "192.0.2.1:8080", "2001:db8::1", "[2001:db8::1]:8080", with IPv4-mapped
// IPv6 addresses as IPv4 and without a zone.
func parseAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	var addr netip.Addr
	var err error
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 || !isPort(s[end+1:]) {
			return netip.Addr{}, false
		}
		addr, err = netip.ParseAddr(s[1:end])
		if err == nil && addr.Is4() {
			err = fmt.Errorf("an IPv4 address in brackets")
		}
	} else if strings.Count(s, ":") == 1 { // IPv4 and a port
		var ap netip.AddrPort
		if ap, err = netip.ParseAddrPort(s); err == nil {
			addr = ap.Addr()
		}
	} else {
		addr, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return addr.WithZone("").Unmap(), true
}

// isPort reports whether s is empty or ":" and a port number.
func isPort(s string) bool {
	if s == "" {
		return true
	}
	if len(s) < 2 || len(s) > 6 || s[0] != ':' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parsePrefix reads a trusted proxy: a network or one address.
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	addr = addr.WithZone("").Unmap()
	return netip.PrefixFrom(addr, addr.BitLen()), nil
}

// forwardedFor returns the for= value of each element of the Forwarded
// fields (RFC 7239), in order, unquoted; "" for an element without one.
func forwardedFor(values []string) []string {
	var out []string
	for _, v := range values {
		for _, element := range splitQuoted(v, ',') {
			hop := ""
			for _, pair := range splitQuoted(element, ';') {
				name, value, _ := strings.Cut(pair, "=")
				if strings.EqualFold(strings.TrimSpace(name), "for") {
					hop = unquote(strings.TrimSpace(value))
				}
			}
			out = append(out, hop)
		}
	}
	return out
}

// splitQuoted splits s at sep outside quoted strings.
func splitQuoted(s string, sep byte) []string {
	var parts []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// unquote removes the quotes and escapes of a quoted-string; a token comes
// back as it is.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		if s[i] == '\\' && i+1 < len(s)-1 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
