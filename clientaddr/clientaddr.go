// Package clientaddr finds the address of a request's client behind
// trusted reverse proxies, the same way for every front of ratelua: the
// net/http middleware (ratehttp) and the gRPC interceptors (rategrpc).
//
// The peer (the address the connection came from) is the client unless it
// is one of the trusted proxies. Then the field the proxies write (one of
// X-Forwarded-For, Forwarded and X-Real-IP, in HTTP headers or gRPC
// metadata) is read from the right: each proxy appended the address it saw
// to what it received, so the rightmost address that is not a trusted
// proxy is the client, and everything to its left was written by the
// client and proves nothing. A value that is not an address ends the walk
// at the trusted proxy that wrote it. Forwarded is parsed strictly (RFC
// 7239 with RFC 9110's lists and quoted strings) one field line at a time:
// a line that does not parse (an unbalanced quote, a stray byte, a
// parameter twice) ends the walk there, so that text a client wrote can
// never swallow, or pose as, what a proxy appended after it.
package clientaddr

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The fields a proxy may write the client's address to, as Options.ProxyHeader
// names them (case does not matter) and as Resolver.Header returns them.
const (
	XForwardedFor = "X-Forwarded-For"
	Forwarded     = "Forwarded"
	XRealIP       = "X-Real-Ip"
)

// Options configure a Resolver. The zero value trusts no proxy (the peer
// is always the client), reads X-Forwarded-For when it trusts one, and
// groups IPv6 clients by /64.
type Options struct {
	// TrustedProxies are the addresses ("10.0.0.1") and networks
	// ("10.0.0.0/8", "2001:db8::/32") of the reverse proxies in front of
	// the service.
	TrustedProxies []string
	// ProxyHeader is the field the trusted proxies write the client's
	// address to: "X-Forwarded-For" (the default), "Forwarded" (RFC 7239,
	// its for= parameters) or "X-Real-IP". Name the one your proxy sets: a
	// field it passes through untouched carries whatever the client wrote.
	ProxyHeader string
	// IPv4Prefix and IPv6Prefix group client addresses into one key per
	// network: 0 means 32 (each IPv4 address) and 64 (a /64, what one IPv6
	// host or site usually gets).
	IPv4Prefix, IPv6Prefix int
}

// ErrInvalidOption is wrapped by the errors of New.
var ErrInvalidOption = errors.New("clientaddr: invalid option")

// Resolver finds client addresses with the rules of its Options. It is
// safe for concurrent use.
type Resolver struct {
	trusted []netip.Prefix
	header  string
	v4bits  int
	v6bits  int
}

// New checks opts and returns their Resolver; a mistake is an error
// naming the option.
func New(opts Options) (*Resolver, error) {
	r := &Resolver{v4bits: opts.IPv4Prefix, v6bits: opts.IPv6Prefix}
	switch {
	case r.v4bits == 0:
		r.v4bits = 32
	case r.v4bits < 0 || r.v4bits > 32:
		return nil, fmt.Errorf("%w: IPv4Prefix must be 1 to 32 (0 means 32), got %d", ErrInvalidOption, r.v4bits)
	}
	switch {
	case r.v6bits == 0:
		r.v6bits = 64
	case r.v6bits < 0 || r.v6bits > 128:
		return nil, fmt.Errorf("%w: IPv6Prefix must be 1 to 128 (0 means 64), got %d", ErrInvalidOption, r.v6bits)
	}
	for i, s := range opts.TrustedProxies {
		p, err := parsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%w: TrustedProxies[%d] %s is neither an address nor a network: %w", ErrInvalidOption, i, quote(s), err)
		}
		r.trusted = append(r.trusted, p)
	}
	switch strings.ToLower(opts.ProxyHeader) {
	case "", "x-forwarded-for":
		r.header = XForwardedFor
	case "forwarded":
		r.header = Forwarded
	case "x-real-ip":
		r.header = XRealIP
	default:
		return nil, fmt.Errorf("%w: ProxyHeader %s must be X-Forwarded-For, Forwarded or X-Real-IP", ErrInvalidOption, quote(opts.ProxyHeader))
	}
	return r, nil
}

// Header is the field the Resolver reads, in HTTP's canonical form:
// XForwardedFor, Forwarded or XRealIP (gRPC metadata keys are the same in
// lower case).
func (r *Resolver) Header() string { return r.header }

// Trusted reports whether addr is one of the trusted proxies.
func (r *Resolver) Trusted(addr netip.Addr) bool {
	for _, p := range r.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Addr returns the client's address. peer is the address the connection
// came from, as net/http's RemoteAddr or a net.Addr's String writes it
// ("192.0.2.1:4711", "[2001:db8::1]:443"); fields are the values of the
// Resolver's Header in the order received, one per field line, read only
// when the peer is trusted. ok is false when peer holds no IP address (a
// Unix socket).
func (r *Resolver) Addr(peer string, fields []string) (addr netip.Addr, ok bool) {
	client, ok := parseAddr(peer)
	if !ok || !r.Trusted(client) {
		return client, ok
	}
	// From the right: each hop was written by the proxy to its right (the
	// last by the peer). The first that is not a trusted proxy is the
	// client; a hop that is not an address, or a line that does not parse,
	// ends the search at the trusted proxy that wrote it.
	for line := len(fields) - 1; line >= 0; line-- {
		hops, parsed := r.hops(fields[line])
		if !parsed {
			return client, true
		}
		for i := len(hops) - 1; i >= 0; i-- {
			var addr netip.Addr
			var ok bool
			if r.header == Forwarded {
				addr, ok = nodeAddr(hops[i])
			} else {
				addr, ok = parseAddr(hops[i])
			}
			if !ok {
				return client, true
			}
			client = addr
			if !r.Trusted(addr) {
				return addr, true
			}
		}
	}
	return client, true
}

// hops splits one field line into its hops, left to right; parsed is false
// for a Forwarded line that is not well-formed.
func (r *Resolver) hops(line string) (hops []string, parsed bool) {
	if r.header == Forwarded {
		return forwardedFor(line)
	}
	for _, h := range strings.Split(line, ",") {
		if h = strings.Trim(h, " \t"); h != "" { // empty list elements do not count
			hops = append(hops, h)
		}
	}
	return hops, true
}

// Key returns the key of the client's address (Addr) grouped by the
// prefix lengths: "192.0.2.1", "2001:db8:1:2::/64". A peer that holds no
// IP address is the key as it is.
func (r *Resolver) Key(peer string, fields []string) string {
	addr, ok := r.Addr(peer, fields)
	if !ok {
		return peer
	}
	return r.Group(addr)
}

// Group writes addr as a key: the address itself, or the network of the
// Resolver's prefix length for its family.
func (r *Resolver) Group(addr netip.Addr) string {
	bits := r.v6bits
	if addr.Is4() {
		bits = r.v4bits
	}
	if bits == addr.BitLen() {
		return addr.String()
	}
	return netip.PrefixFrom(addr, bits).Masked().String()
}

// parseAddr reads an address as proxies write it in X-Forwarded-For and
// X-Real-IP, and as peers are written: "192.0.2.1", "192.0.2.1:8080",
// "2001:db8::1", "[2001:db8::1]:8080", with IPv4-mapped IPv6 addresses as
// IPv4 and without a zone.
func parseAddr(s string) (netip.Addr, bool) {
	s = strings.Trim(s, " \t")
	var addr netip.Addr
	var err error
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 || !isPort(s[end+1:]) {
			return netip.Addr{}, false
		}
		addr, err = netip.ParseAddr(s[1:end])
		if err == nil && addr.Is4() {
			err = errors.New("an IPv4 address in brackets")
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

// quote writes s in an error message, bounded and escaped.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
