// Package addrcases holds the cases that ask a clientaddr.Resolver for a
// client's key, as testdata/clientaddr.json and the differential fuzz (Go
// against the Python and Node packages) ask them: the named cases, a
// generator of random ones, and Go's answers. The generator
// (internal/generate) writes the table; clientaddr's tests fuzz with it.
package addrcases

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ratelua/ratelua/clientaddr"
)

// Input is one case, a question to a Resolver, as testdata/clientaddr.json
// and the differential fuzz (Go against the Python and Node packages) ask
// it: the options, the peer and the field lines; the answer is the key, or
// the option New refuses.
type Input struct {
	Name    string  `json:"name,omitempty"`
	Options Options `json:"options"`
	// Peer and Fields are bytes, written one character per byte
	// (latin-1), as Python's ASGI servers and Node's http give them.
	Peer   string   `json:"peer"`
	Fields []string `json:"fields"`
}

// Options are clientaddr.Options in the packages' JSON form. TrustedProxies are
// text (UTF-8), as a configuration holds them.
type Options struct {
	TrustedProxies []string `json:"trusted_proxies"`
	ProxyHeader    string   `json:"proxy_header"`
	IPv4Prefix     int      `json:"ipv4_prefix"`
	IPv6Prefix     int      `json:"ipv6_prefix"`
}

// Answer is what a Resolver answers: the key, or the refused option
// (its name as Options spells it, and its index in TrustedProxies, else -1).
type Answer struct {
	Key   string       `json:"key"`
	Error *OptionError `json:"error,omitempty"`
}

// OptionError names the option New refused.
type OptionError struct {
	Option string `json:"option"`
	Index  int    `json:"index"`
}

// Vector is a case and its answer, a row of testdata/clientaddr.json.
type Vector struct {
	Input
	Answer
}

var refusedOption = regexp.MustCompile(`^clientaddr: invalid option: (TrustedProxies|ProxyHeader|IPv4Prefix|IPv6Prefix)(?:\[(\d+)\])?`)

// Answer asks Go's Resolver.
func (c Input) Answer() (Answer, error) {
	r, err := clientaddr.New(clientaddr.Options{
		TrustedProxies: c.Options.TrustedProxies, ProxyHeader: c.Options.ProxyHeader,
		IPv4Prefix: c.Options.IPv4Prefix, IPv6Prefix: c.Options.IPv6Prefix,
	})
	if err != nil {
		m := refusedOption.FindStringSubmatch(err.Error())
		if m == nil || !errors.Is(err, clientaddr.ErrInvalidOption) {
			return Answer{}, fmt.Errorf("an error that names no option: %w", err)
		}
		index := -1
		if m[2] != "" {
			index, _ = strconv.Atoi(m[2])
		}
		return Answer{Error: &OptionError{Option: m[1], Index: index}}, nil
	}
	fields := make([]string, len(c.Fields))
	for i, f := range c.Fields {
		fields[i] = FromLatin1(f)
	}
	return Answer{Key: ToLatin1(r.Key(FromLatin1(c.Peer), fields))}, nil
}

// ToLatin1 writes bytes one character per byte.
func ToLatin1(b string) string {
	rs := make([]rune, len(b))
	for i := 0; i < len(b); i++ {
		rs[i] = rune(b[i])
	}
	return string(rs)
}

// FromLatin1 reads what ToLatin1 wrote (a character above U+00FF keeps its
// low byte: the generators write none).
func FromLatin1(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return string(b)
}

// Gen makes random cases: the options from pools of well-formed and
// broken values, a peer most often trusted (so that the fields matter),
// and field lines that proxies appended to whatever a client wrote, with
// the quotes, escapes, separators, addresses and bytes a parser can trip
// on.
type Gen struct{ r *rand.Rand }

// NewGen returns a generator drawing from r.
func NewGen(r *rand.Rand) Gen { return Gen{r} }

var (
	genTrusted = []string{
		"10.0.0.0/8", "10.0.0.1", "192.0.2.0/24", "fd00::/8", "2001:db8::/32", "2001:db8::1",
		"::ffff:0.0.0.0/96", "::ffff:0.0.0.0/95", "::ffff:0.0.0.0/97", "::ffff:10.0.0.0/104", "::ffff:10.0.0.1",
		"::ffff:0:0/96", "::/0", "0.0.0.0/0", "10.0.0.0/08", "10.0.0.0/+8", "10.0.0.0/33", " 10.0.0.0/8\t",
		"fe80::1%eth0", "fe80::/10%x", "\u00a010.0.0.1\u2003", "10.0.0.0/8/8", "10.0.0.1/32", "::1/128",
		"1.2.3.4/0", "10.0.0.0/-1", "", "garbage", "::ffff:10.0.0.0/128", "0.0.0.0/1", "128.0.0.0/1",
	}
	genHeaders = []string{"X-Forwarded-For", "Forwarded", "X-Real-IP", "", "forwarded", "X-REAL-IP", "x-forwarded-for", "X-Client-IP", "forwarded "}
	genPeers   = []string{
		"10.0.0.1", "10.0.0.1:4711", "10.9.9.9", "192.0.2.7:80", "[fd00::1]:443", "fd00::2", "::ffff:10.0.0.1",
		"[::ffff:10.0.0.1]:80", "2001:db8::1", "[2001:db8::1]", "203.0.113.5", "@", "", "unix:s.sock", "10.0.0.1:99999",
		"10.0.0.01", " 10.0.0.1\t", "[10.0.0.1]:80", "fe80::1%eth0", "[fd00::1%2]:80", "::", "0.0.0.0",
	}
	genAddrs = []string{
		"1.2.3.4", "198.51.100.7", "10.0.0.9", "192.0.2.200", "0.0.0.0", "255.255.255.255", "01.2.3.4", "1.2.3.256",
		"1.2.3", "1.2.3.4.5", "2001:db8::7", "2001:db8:0:1:1:1:1:1", "fd00::9", "::ffff:1.2.3.4", "::ffff:10.0.0.3",
		"::1.2.3.4", "::", "::1", "1::", "2001:DB8::A", "2001:db8::1:2:3:4:5:6", "2001:db8:1:2:3:4:5:6:7", "::ffff:1.2.3",
		"fe80::1%eth0", "fe80::1%", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:7:1.2.3.4", "12345::1", "unknown", "_hidden",
	}
	genPieces = []string{
		"for=", "For=", "FOR=", "proto=https", "by=_edge", "host=x", "=", ";", ",", ", ", " ", "\t", `"`, `\`, `\"`,
		"[", "]", ":", ":80", ":_p", ":", "%", "%eth0", "\x01", "\x7f", "\x80", "\xc3\xa9", "\xff", "x=", "unknown",
		"\x00", "\r", "\v", "\xa0", "\x85",
	}
)

func (g Gen) pick(s []string) string { return s[g.r.IntN(len(s))] }

// addr returns an address as a proxy or a client may write it.
func (g Gen) addr() string {
	switch g.r.IntN(4) {
	case 0:
		var b [4]byte
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		if g.r.IntN(2) == 0 {
			b[0] = 10
		}
		return netip.AddrFrom4(b).String()
	case 1:
		var b [16]byte
		for i := range b {
			if g.r.IntN(3) > 0 {
				b[i] = byte(g.r.IntN(256))
			}
		}
		if g.r.IntN(2) == 0 {
			b[0] = 0xfd
		}
		return netip.AddrFrom16(b).String()
	}
	return g.pick(genAddrs)
}

// hop writes an address the way a header carries it.
func (g Gen) hop(header string) string {
	a := g.addr()
	v6 := strings.Contains(a, ":")
	if strings.EqualFold(header, clientaddr.Forwarded) {
		switch g.r.IntN(6) {
		case 0:
			return "for=" + a
		case 1:
			if v6 {
				a = "[" + a + "]"
			}
			return `for="` + a + `"`
		case 2:
			if v6 {
				a = "[" + a + "]"
			}
			return `proto=https;For="` + a + `:443";by=_edge`
		case 3:
			return `for="[` + a + `]:_x"`
		}
		return "for=" + g.pick(genAddrs)
	}
	switch g.r.IntN(4) {
	case 0:
		if v6 {
			return "[" + a + "]:" + strconv.Itoa(g.r.IntN(70000))
		}
		return a + ":" + strconv.Itoa(g.r.IntN(70000))
	case 1:
		return " " + a + "\t"
	}
	return a
}

// noise is what a client may write: pieces, addresses and random bytes.
func (g Gen) noise(header string) string {
	if g.r.IntN(2) == 0 {
		// Well-formed hops with one piece inserted: the smuggling attempts
		// (an unbalanced quote, an escape, a stray separator) that a lax
		// parser lets through.
		s := g.hop(header)
		for range g.r.IntN(3) {
			s += g.pick([]string{", ", ";", ","}) + g.hop(header)
		}
		at := g.r.IntN(len(s) + 1)
		piece := g.pick([]string{`;x="`, `"`, `\`, `;x="\"`, ",", ";", " ", "=", g.pick(genPieces)})
		return s[:at] + piece + s[at:]
	}
	var b strings.Builder
	for range g.r.IntN(8) {
		switch g.r.IntN(4) {
		case 0:
			b.WriteString(g.hop(header))
		case 1:
			b.WriteByte(byte(g.r.IntN(256)))
		default:
			b.WriteString(g.pick(genPieces))
		}
	}
	return b.String()
}

// Next returns a random case.
func (g Gen) Next() Input {
	var c Input
	if g.r.IntN(20) > 0 {
		c.Options.ProxyHeader = g.pick(genHeaders[:3])
	} else {
		c.Options.ProxyHeader = g.pick(genHeaders)
	}
	for range g.r.IntN(4) {
		c.Options.TrustedProxies = append(c.Options.TrustedProxies, g.pick(genTrusted))
	}
	if g.r.IntN(3) > 0 { // mostly a configuration that works
		c.Options.TrustedProxies = append(c.Options.TrustedProxies, "10.0.0.0/8", "fd00::/8")
		c.Options.TrustedProxies = slicesFilter(c.Options.TrustedProxies, func(s string) bool {
			_, err := clientaddr.New(clientaddr.Options{TrustedProxies: []string{s}})
			return err == nil
		})
	}
	if g.r.IntN(4) == 0 {
		c.Options.IPv4Prefix = g.r.IntN(36) - 1
		c.Options.IPv6Prefix = g.r.IntN(132) - 1
	}
	if g.r.IntN(4) > 0 {
		c.Peer = ToLatin1(g.hop(clientaddr.XForwardedFor))
		if g.r.IntN(2) == 0 {
			c.Peer = "10.0.0." + strconv.Itoa(1+g.r.IntN(254))
		}
	} else {
		c.Peer = ToLatin1(g.pick(genPeers))
	}
	header := c.Options.ProxyHeader
	if g.r.IntN(8) == 0 {
		// The attack of issue 30's H1 and its kin: a client's element
		// with a smuggling piece, then what the trusted proxy appends, on
		// the client's line or a line of its own.
		c.Options.ProxyHeader = clientaddr.Forwarded
		c.Peer = "10.0.0." + strconv.Itoa(1+g.r.IntN(254))
		client := g.hop(clientaddr.Forwarded) + g.pick([]string{`;x="`, `;x="\"`, `\`, `;x="a`, ` "`, `;for=1.2.3.4`, `;x=`})
		proxy := g.hop(clientaddr.Forwarded)
		if g.r.IntN(2) == 0 {
			c.Fields = []string{ToLatin1(client + ", " + proxy)}
		} else {
			c.Fields = []string{ToLatin1(client), ToLatin1(proxy)}
		}
		return c
	}
	// What the client wrote, then what each proxy appended, on the last
	// line or a line of its own.
	var lines []string
	for range g.r.IntN(3) {
		lines = append(lines, g.noise(header))
	}
	for range g.r.IntN(4) {
		h := g.hop(header)
		if g.r.IntN(3) == 0 {
			h = g.noise(header)
		}
		if len(lines) == 0 || g.r.IntN(3) == 0 {
			lines = append(lines, h)
		} else {
			lines[len(lines)-1] += g.pick([]string{", ", ",", " , ", ",\t"}) + h
		}
	}
	for _, l := range lines {
		c.Fields = append(c.Fields, ToLatin1(l))
	}
	if c.Fields == nil {
		c.Fields = []string{}
	}
	return c
}

func slicesFilter(s []string, keep func(string) bool) []string {
	var out []string
	for _, x := range s {
		if keep(x) && utf8.ValidString(x) {
			out = append(out, x)
		}
	}
	return out
}
