package addrcases

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
)

// Named returns the cases chosen by hand: issue 30's H1 (a client's
// unbalanced quote in Forwarded), issue 36's rows 4 and 5 (IPv6 single
// zero groups, IPv4-mapped trusted networks at /95, /96, /97), and the
// edges of each parser.
func Named() []Input {
	var out []Input
	add := func(name string, o Options, peer string, fields ...string) {
		if fields == nil {
			fields = []string{}
		}
		out = append(out, Input{Name: name, Options: o, Peer: ToLatin1(peer), Fields: latin1All(fields)})
	}
	fwd := Options{TrustedProxies: []string{"10.0.0.0/8"}, ProxyHeader: "Forwarded", IPv6Prefix: 128}
	xff := Options{TrustedProxies: []string{"10.0.0.0/8", "fd00::/8"}}

	// H1: the client's unbalanced quote and what the proxy appends.
	for n := 1; n <= 3; n++ {
		client := fmt.Sprintf(`for=198.51.100.%d;x="`, n)
		add("H1: the proxy appends to the client's line", fwd, "10.0.0.1", client+", for=203.0.113.9")
		add("H1: the proxy appends a line", fwd, "10.0.0.1", client, "for=203.0.113.9")
		add("H1: two proxies append to the client's line", fwd, "10.0.0.2", client+", for=203.0.113.9, for=10.0.0.1")
	}
	add("H1: an escaped quote keeps it open", fwd, "10.0.0.1", `for=9.9.9.9;x="\", for=1.2.3.4`)
	add("H1: a quote closed by the proxy's value", fwd, "10.0.0.1", `for=9.9.9.9;x=", for="[2001:db8::1]:443"`)
	add("Forwarded: a backslash outside quotes", fwd, "10.0.0.1", `for=9.9.9.9\, for=1.2.3.4`)
	add("Forwarded: a parameter twice", fwd, "10.0.0.1", `for=9.9.9.9;for=8.8.8.8, for=1.2.3.4`)
	add("Forwarded: a parameter twice in two cases", fwd, "10.0.0.1", `for=9.9.9.9;FOR=8.8.8.8, for=1.2.3.4`)
	add("Forwarded: a pair without a value", fwd, "10.0.0.1", `for=, for=1.2.3.4`)
	add("Forwarded: a control byte in quotes", fwd, "10.0.0.1", "for=\"9.9.9.9\x01\", for=1.2.3.4")
	add("Forwarded: obs-text in quotes", fwd, "10.0.0.1", "for=9.9.9.9;x=\"\xc3\xa9\xff\", for=1.2.3.4")
	add("Forwarded: obs-text in a token", fwd, "10.0.0.1", "for=9.9.9.9;x=\xc3\xa9, for=1.2.3.4")
	add("Forwarded: well-formed", fwd, "10.0.0.1", `for=9.9.9.9;proto=https, for="1.2.3.4:80" ; by=10.0.0.1`)
	add("Forwarded: empty elements", fwd, "10.0.0.1", `for=9.9.9.9,, ,for=1.2.3.4,`)
	add("Forwarded: an element without for", fwd, "10.0.0.1", `for=9.9.9.9, proto=https`)
	add("Forwarded: IPv6 bracketed", fwd, "10.0.0.1", `for="[2001:db8::7]"`)
	add("Forwarded: IPv6 unbracketed", fwd, "10.0.0.1", `for="2001:db8::7"`)
	add("Forwarded: IPv4 bracketed", fwd, "10.0.0.1", `for="[1.2.3.4]"`)
	add("Forwarded: IPv4-mapped bracketed", fwd, "10.0.0.1", `for="[::ffff:1.2.3.4]:80"`)
	add("Forwarded: a zone", fwd, "10.0.0.1", `for="[fe80::1%eth0]"`)
	add("Forwarded: an obfuscated port", fwd, "10.0.0.1", `for="1.2.3.4:_abc"`)
	add("Forwarded: an obfuscated port of one _", fwd, "10.0.0.1", `for="1.2.3.4:_"`)
	add("Forwarded: a port too long", fwd, "10.0.0.1", `for="1.2.3.4:123456"`)
	add("Forwarded: an empty port", fwd, "10.0.0.1", `for="1.2.3.4:"`)
	add("Forwarded: unknown", fwd, "10.0.0.1", `for=unknown`)
	add("Forwarded: an obfuscated node", fwd, "10.0.0.1", `for=_hidden`)
	add("Forwarded: a trusted hop then the client", fwd, "10.0.0.1", `for=6.6.6.6, for=1.2.3.4, for=10.0.0.9`)
	add("Forwarded: a malformed line left of the client", fwd, "10.0.0.1", `for="`, `for=1.2.3.4, for=10.0.0.9`)
	add("Forwarded: a malformed line after a trusted hop", fwd, "10.0.0.1", `for="`, `for=10.0.0.9`)
	add("Forwarded: OWS around ;", fwd, "10.0.0.1", "for=1.2.3.4 ;\tproto=http")
	add("Forwarded: a space inside a pair", fwd, "10.0.0.1", "for = 1.2.3.4")
	add("Forwarded: an untrusted peer", fwd, "203.0.113.1", `for=1.2.3.4`)

	// X-Forwarded-For and X-Real-IP.
	add("XFF: the rightmost untrusted", xff, "10.0.0.1", "203.0.113.9, 198.51.100.1, 10.0.0.2")
	add("XFF: junk ends the walk", xff, "10.0.0.1", "198.51.100.1, junk, 10.0.0.3")
	add("XFF: empty elements do not count", xff, "10.0.0.1", "1.2.3.4, , ,")
	add("XFF: an empty line", xff, "10.0.0.1", "1.2.3.4", "")
	add("XFF: lines right to left", xff, "10.0.0.1", "1.2.3.4", "10.0.0.7, 10.0.0.8")
	add("XFF: tabs trimmed", xff, "10.0.0.1", "\t1.2.3.4 \t")
	add("XFF: other space is not trimmed", xff, "10.0.0.1", "\v1.2.3.4", "\xa01.2.3.4")
	add("XFF: ports", xff, "10.0.0.1", "1.2.3.4:80, [2001:db8::1]:443")
	add("XFF: a port with leading zeros", xff, "10.0.0.1", "1.2.3.4:00080")
	add("XFF: a port too large", xff, "10.0.0.1", "1.2.3.4:65536")
	add("XFF: a bracketed port past 65535", xff, "10.0.0.1", "[2001:db8::1]:99999")
	add("XFF: a bracketed port too long", xff, "10.0.0.1", "[2001:db8::1]:123456")
	add("XFF: IPv4 in brackets", xff, "10.0.0.1", "[1.2.3.4]")
	add("XFF: IPv4-mapped", xff, "10.0.0.1", "::ffff:1.2.3.4")
	add("XFF: IPv4-mapped trusted", xff, "10.0.0.1", "1.2.3.4, ::ffff:10.0.0.5")
	add("XFF: a zone", xff, "10.0.0.1", "fe80::1%eth0")
	add("XFF: an empty zone", xff, "10.0.0.1", "fe80::1%")
	add("XFF: a trusted IPv6 proxy", xff, "[fd00::1]:443", "2001:db8::5, fd00::2")
	add("X-Real-IP", Options{TrustedProxies: []string{"10.0.0.1"}, ProxyHeader: "X-Real-IP"}, "10.0.0.1", "1.2.3.4")
	add("X-Real-IP: a list", Options{TrustedProxies: []string{"10.0.0.1"}, ProxyHeader: "x-real-ip"}, "10.0.0.1", "6.6.6.6, 1.2.3.4")
	add("no field", xff, "10.0.0.1")
	add("an untrusted peer", xff, "203.0.113.1", "1.2.3.4")

	// Addresses as netip parses them.
	for _, a := range []string{
		"1.2.3.4", "01.2.3.4", "1.2.3.04", "0.0.0.0", "1.2.3.256", "1.2.3", "1.2.3.4.5", "1..3.4", ".1.2.3", "1.2.3.",
		"::", "::1", "1::", "1::2::3", ":1::2", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7::", "::1:2:3:4:5:6:7",
		"1:2:3:4:5:6:7::8", "12345::", "0001::", "00001::", "::ffff:1.2.3.4", "::FFFF:1.2.3.4", "::1.2.3.4", "1:2:3:4:5:6:1.2.3.4",
		"1:2:3:4:5:6:7:1.2.3.4", "::ffff:01.2.3.4", "::ffff:1.2.3", "1.2.3.4%eth0", "%eth0", "::%", "ABCD:EF01::", "2001:db8::g",
		"1.2.3.4 ", "\t::1", "1.2.3.4\x00", "\u0661.2.3.4",
	} {
		add("address "+strings.ToValidUTF8(a, "?"), Options{IPv6Prefix: 128}, a)
		add("hop "+strings.ToValidUTF8(a, "?"), Options{TrustedProxies: []string{"10.0.0.0/8"}, IPv6Prefix: 128}, "10.0.0.1", a)
	}
	add("a peer that is no address", Options{}, "@")
	add("an empty peer", Options{}, "")

	// Issue 36, row 4: every prefix length, on addresses whose groups
	// (and whose masked groups) hold single zeros and runs of zeros.
	for _, a := range []string{
		"2001:db8:0:1:1:1:1:1", "2001:0:1:1:1:1:1:1", "1:1:1:1:1:1:1:0", "0:1:1:1:1:1:1:1", "2001:db8:0:0:1:0:0:1",
		"2001:db8:0:1:0:0:1:1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "1:0:1:0:1:0:1:0",
	} {
		for bits := 1; bits <= 128; bits++ {
			add(fmt.Sprintf("IPv6 /%d of %s", bits, a), Options{IPv6Prefix: bits}, "["+a+"]:443")
		}
	}
	for _, a := range []string{"192.0.2.255", "255.255.255.255", "10.1.0.1"} {
		for bits := 1; bits <= 32; bits++ {
			add(fmt.Sprintf("IPv4 /%d of %s", bits, a), Options{IPv4Prefix: bits}, a+":80")
		}
	}

	// Issue 36, row 5: IPv4-mapped trusted networks at the /96 boundary.
	for _, bits := range []int{0, 1, 80, 95, 96, 97, 104, 120, 127, 128} {
		for _, p := range []string{"::ffff:0.0.0.0", "::ffff:10.0.0.0", "::ffff:0:0"} {
			o := Options{TrustedProxies: []string{fmt.Sprintf("%s/%d", p, bits)}, IPv6Prefix: 128}
			for _, peer := range []string{"10.0.0.1", "::ffff:10.0.0.1", "[::ffff:10.0.0.1]:80", "0.0.0.0", "::ffff:0:1", "::1", "11.0.0.1"} {
				add(fmt.Sprintf("mapped %s/%d, peer %s", p, bits, peer), o, peer, "203.0.113.9")
			}
		}
	}
	add("a mapped trusted address", Options{TrustedProxies: []string{"::ffff:10.0.0.1"}}, "10.0.0.1", "203.0.113.9")

	// Trusted proxies as configurations write them, and the refused.
	for _, p := range []string{
		" 10.0.0.0/8\t", "\u00a010.0.0.1\u2003", "10.0.0.0/08", "10.0.0.0/+8", "10.0.0.0/-1", "10.0.0.0/33", "10.0.0.0/",
		"10.0.0.0/8/8", "fe80::1%eth0", "fe80::/10%x", "fe80::1%eth0/64", "::/0", "0.0.0.0/0", "::ffff:10.0.0.0/129",
		"10.0.0.1/32", "garbage", "", "10.0.0.1 /8", "\u0661\u0660.0.0.0/8", "10.0.0.0/\u0668",
	} {
		add("trusted "+p, Options{TrustedProxies: []string{"192.0.2.1", p}}, "10.0.0.1", "203.0.113.9")
	}
	for _, h := range []string{"", "FORWARDED", "x-real-ip", "X-Client-IP", "forwarded ", "constructor", "__proto__"} {
		add("proxy header "+h, Options{TrustedProxies: []string{"10.0.0.1"}, ProxyHeader: h}, "10.0.0.1", "203.0.113.9")
	}
	for _, bits := range []int{-1, 0, 1, 32, 33} {
		add(fmt.Sprintf("IPv4Prefix %d", bits), Options{IPv4Prefix: bits}, "192.0.2.255")
	}
	for _, bits := range []int{-1, 0, 1, 64, 128, 129} {
		add(fmt.Sprintf("IPv6Prefix %d", bits), Options{IPv6Prefix: bits}, "2001:db8::1")
	}
	return out
}

func latin1All(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = ToLatin1(f)
	}
	return out
}

// Vectors returns the named cases and 400 random ones (a fixed seed), each
// with Go's answer: the rows of testdata/clientaddr.json.
func Vectors() ([]Vector, error) {
	cases := Named()
	g := NewGen(rand.New(rand.NewPCG(30, 36)))
	for i := range 400 {
		c := g.Next()
		c.Name = fmt.Sprintf("random %d", i)
		cases = append(cases, c)
	}
	out := make([]Vector, len(cases))
	for i, c := range cases {
		a, err := c.Answer()
		if err != nil {
			return nil, fmt.Errorf("addrcases: %s: %w", c.Name, err)
		}
		out[i] = Vector{c, a}
	}
	return out, nil
}

// ErrMissingCase is returned by Check when the table lacks a kind of case
// it must hold, and when a case of issue 30's H1 answers with a value the
// client wrote.
var ErrMissingCase = errors.New("addrcases: the vectors miss a case")

// Check reports whether the table covers what it must: every prefix length
// of both families, addresses with a single zero group, the IPv4-mapped
// /95, /96 and /97, the H1 smuggling (never answered with the client's
// value), and refused options.
func Check(vectors []Vector) error {
	v6bits, v4bits := map[int]bool{}, map[int]bool{}
	var singleZero, mapped, h1, refused int
	var problems []string
	for _, v := range vectors {
		if v.Error != nil {
			refused++
			continue
		}
		if strings.HasPrefix(v.Name, "IPv6 /") {
			v6bits[v.Options.IPv6Prefix] = true
			if a, err := netip.ParseAddr(strings.SplitN(v.Key, "/", 2)[0]); err == nil && a.Is6() && !strings.Contains(v.Key, "::") && strings.Contains(":"+v.Key, ":0:") {
				singleZero++
			}
		}
		if strings.HasPrefix(v.Name, "IPv4 /") {
			v4bits[v.Options.IPv4Prefix] = true
		}
		for _, p := range v.Options.TrustedProxies {
			for _, b := range []string{"/95", "/96", "/97"} {
				if strings.HasPrefix(p, "::ffff:") && strings.HasSuffix(p, b) && v.Key == "203.0.113.9" {
					mapped++
				}
			}
		}
		if strings.HasPrefix(v.Name, "H1") && v.Key != "10.0.0.1" && v.Key != "10.0.0.2" && !strings.HasPrefix(v.Key, "203.0.113.") {
			problems = append(problems, fmt.Sprintf("%s: %q: key %s, a value the client wrote", v.Name, v.Fields, v.Key))
		}
		if strings.HasPrefix(v.Name, "H1") {
			h1++
		}
	}
	if len(v6bits) != 128 || len(v4bits) != 32 || singleZero == 0 || mapped == 0 || h1 == 0 || refused == 0 {
		problems = append(problems, fmt.Sprintf("IPv6 prefixes %d of 128, IPv4 %d of 32, single zero groups %d, mapped networks trusted %d, H1 %d, refused %d",
			len(v6bits), len(v4bits), singleZero, mapped, h1, refused))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrMissingCase, strings.Join(problems, "; "))
	}
	return nil
}

// Table returns testdata/clientaddr.json: the vectors after Check, one
// case a line, so that a change reads as a diff of cases.
func Table(vectors []Vector) ([]byte, error) {
	if err := Check(vectors); err != nil {
		return nil, err
	}
	comment, err := json.Marshal("Code generated by luagen (make generate) from Go's clientaddr; DO NOT EDIT. For each case, the Resolver's options, the peer and the field lines (bytes written one character per byte, latin-1), and the key Go answers, or the option New refuses (its name as clientaddr.Options spells it, and its index in TrustedProxies, else -1). The Python (ratelua.clientaddr) and Node (src/address.js) resolvers must give the same answers.")
	if err != nil {
		return nil, fmt.Errorf("addrcases: %w", err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "{\n \"comment\": %s,\n \"cases\": [\n", comment)
	for i, v := range vectors {
		line, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("addrcases: %s: %w", v.Name, err)
		}
		sep := ","
		if i == len(vectors)-1 {
			sep = ""
		}
		fmt.Fprintf(&buf, "  %s%s\n", line, sep)
	}
	buf.WriteString(" ]\n}\n")
	return buf.Bytes(), nil
}
