package clientaddr

import (
	"net/netip"
	"strings"
)

// forwardedFor parses one Forwarded field line strictly and returns the
// for= value of each element, left to right, unquoted ("" for an element
// without one); parsed is false when the line is not well-formed:
//
//	Forwarded         = 1#forwarded-element            (RFC 7239, 4)
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair    = token "=" value
//	value             = token / quoted-string
//
// with RFC 9110's list rule (elements separated by OWS "," OWS, empty
// elements ignored) and quoted-string (qdtext and quoted-pair only). OWS
// around ";" is accepted; a parameter twice in one element is not.
func forwardedFor(line string) (hops []string, parsed bool) {
	p := forwardedParser{s: line}
	p.skipOWS()
	for !p.done() {
		if p.peek() == ',' { // an empty element
			p.i++
			p.skipOWS()
			continue
		}
		hop, ok := p.element()
		if !ok {
			return nil, false
		}
		hops = append(hops, hop)
		p.skipOWS()
		if p.done() {
			break
		}
		if p.peek() != ',' {
			return nil, false
		}
		p.i++
		p.skipOWS()
	}
	return hops, true
}

// forwardedParser reads a Forwarded field line from position i.
type forwardedParser struct {
	s string
	i int
}

func (p *forwardedParser) done() bool { return p.i >= len(p.s) }
func (p *forwardedParser) peek() byte { return p.s[p.i] }

func (p *forwardedParser) skipOWS() {
	for !p.done() && (p.peek() == ' ' || p.peek() == '\t') {
		p.i++
	}
}

// element reads one forwarded-element up to the "," or the end that
// follows it, and returns its for= value.
func (p *forwardedParser) element() (hop string, ok bool) {
	seen := map[string]bool{}
	for {
		p.skipOWS()
		if !p.done() && p.peek() != ';' && p.peek() != ',' {
			name, value, ok := p.pair()
			if !ok {
				return "", false
			}
			name = strings.ToLower(name)
			if seen[name] {
				return "", false
			}
			seen[name] = true
			if name == "for" {
				hop = value
			}
			p.skipOWS()
		}
		if p.done() || p.peek() == ',' {
			return hop, true
		}
		if p.peek() != ';' {
			return "", false
		}
		p.i++
	}
}

// pair reads token "=" value.
func (p *forwardedParser) pair() (name, value string, ok bool) {
	if name = p.token(); name == "" || p.done() || p.peek() != '=' {
		return "", "", false
	}
	p.i++
	if !p.done() && p.peek() == '"' {
		value, ok = p.quoted()
		return name, value, ok
	}
	value = p.token()
	return name, value, value != ""
}

// token reads a token (RFC 9110's tchar).
func (p *forwardedParser) token() string {
	start := p.i
	for !p.done() && isTchar(p.peek()) {
		p.i++
	}
	return p.s[start:p.i]
}

// quoted reads a quoted-string and returns its content unescaped.
func (p *forwardedParser) quoted() (string, bool) {
	p.i++ // the opening quote
	var b strings.Builder
	for !p.done() {
		c := p.peek()
		p.i++
		switch {
		case c == '"':
			return b.String(), true
		case c == '\\':
			if p.done() || !isQuotable(p.peek()) {
				return "", false
			}
			b.WriteByte(p.peek())
			p.i++
		case isQdtext(c):
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return "", false // no closing quote
}

// isTchar reports a tchar: "!#$%&'*+-.^_`|~", a digit or a letter.
func isTchar(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isQdtext reports qdtext: HTAB, SP, %x21, %x23-5B, %x5D-7E, obs-text.
func isQdtext(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e) || c >= 0x80
}

// isQuotable reports what a quoted-pair may escape: HTAB, SP, VCHAR,
// obs-text.
func isQuotable(c byte) bool { return c == '\t' || (c >= 0x20 && c != 0x7f) }

// nodeAddr reads the address of a for= value, strictly (RFC 7239, 6):
// IPv4address [":" node-port] or "[" IPv6address "]" [":" node-port],
// node-port a port number or an obfuscated port ("_" and letters, digits,
// ".", "_", "-"). "unknown", an obfuscated node and anything else are not
// addresses. An IPv4-mapped IPv6 address is read as IPv4.
func nodeAddr(v string) (netip.Addr, bool) {
	var host, port string
	if strings.HasPrefix(v, "[") {
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host, port = v[1:end], v[end+1:]
	} else {
		host, port, _ = strings.Cut(v, ":")
		if port != "" || strings.HasSuffix(v, ":") {
			port = ":" + port
		}
	}
	if port != "" && !isNodePort(port[1:]) || port != "" && port[0] != ':' {
		return netip.Addr{}, false
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || addr.Zone() != "" || addr.Is4() != !strings.HasPrefix(v, "[") {
		return netip.Addr{}, false
	}
	return addr.Unmap(), true
}

// isNodePort reports a node-port: 1 to 5 digits, or "_" and 1 or more of
// letters, digits, ".", "_", "-".
func isNodePort(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '_' {
		if len(s) == 1 {
			return false
		}
		for i := 1; i < len(s); i++ {
			c := s[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
		return true
	}
	if len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
