package clientaddr

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// FuzzClientKey: a client behind 0 to 3 trusted proxies writes whatever it
// likes in one or two field lines of X-Forwarded-For, Forwarded or
// X-Real-IP (quotes, escapes, commas, semicolons, bytes of any kind); each
// proxy then appends the address it saw, on the last line or a line of its
// own, in one of the forms proxies write (X-Real-IP: the proxy at the edge
// sets the field to the address it saw, the others pass it on). The key must be the peer or an address a
// trusted proxy appended (the real client's among them), never a value
// from the part the client wrote; and whenever the client's text cannot
// touch the first proxy's element (X-Forwarded-For and X-Real-IP, or a
// Forwarded element on a line of its own) it must be the real client's.
func FuzzClientKey(f *testing.F) {
	f.Add(`for=9.9.9.9;x="`, "", uint8(1), uint8(1), uint16(0), uint64(0x01020304), false)
	f.Add(`for=9.9.9.9;x="`, "", uint8(1), uint8(2), uint16(0b1010), uint64(0x01020304), true)
	f.Add("6.6.6.6, 10.0.0.9", "", uint8(0), uint8(2), uint16(0), uint64(0xc6336407), false)
	f.Add(`for="[2001:db8::1]:80";proto=https, for=_x`, `for=unknown`, uint8(1), uint8(3), uint16(0xffff), uint64(42), true)
	f.Add("1.1.1.1", "2.2.2.2", uint8(2), uint8(1), uint16(3), uint64(7), false)
	f.Add(`for="\"`, `,,;`, uint8(1), uint8(2), uint16(0x5555), uint64(1<<40), true)
	f.Fuzz(func(t *testing.T, client1, client2 string, kind, proxies uint8, layout uint16, seed uint64, v6 bool) {
		header := []string{XForwardedFor, Forwarded, XRealIP}[int(kind)%3]
		k := int(proxies) % 4
		r, err := New(Options{TrustedProxies: []string{"10.0.0.0/8", "fd00::/8"}, ProxyHeader: header})
		if err != nil {
			t.Fatal(err)
		}
		bit := func(i int) bool { return layout>>(i%16)&1 == 1 }

		// The real client, never a trusted proxy; the proxies, P1 nearest
		// the client; the peer, the last proxy (or the client itself).
		var real netip.Addr
		if v6 {
			var b [16]byte
			binary.BigEndian.PutUint64(b[:8], seed|1<<61)
			binary.BigEndian.PutUint64(b[8:], seed*0x9e3779b97f4a7c15)
			real = netip.AddrFrom16(b)
		} else {
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], uint32(seed))
			if b[0] == 10 {
				b[0] = 11
			}
			real = netip.AddrFrom4(b)
		}
		hops := []netip.Addr{real} // hops[j] is what proxy j+1 saw
		for j := 1; j <= k; j++ {
			if bit(j) {
				hops = append(hops, netip.MustParseAddr(fmt.Sprintf("fd00::%d", j)))
			} else {
				hops = append(hops, netip.MustParseAddr(fmt.Sprintf("10.0.0.%d", j)))
			}
		}
		peerAddr := hops[k]
		peer := netip.AddrPortFrom(peerAddr, 40000).String()

		// What the client sent: one or two lines, as HTTP can carry them.
		var fields []string
		for _, s := range []string{client1, client2} {
			s = strings.Map(func(c rune) rune {
				if c == '\r' || c == '\n' || c == 0 {
					return ' '
				}
				return c
			}, s)
			if s != "" {
				fields = append(fields, s)
			}
		}
		clientLines := len(fields)
		firstOwnLine := false
		for j := 1; j <= k; j++ {
			saw := hops[j-1]
			if header == XRealIP {
				// The proxy at the edge sets the field to the address it
				// saw, replacing the client's; the proxies after it pass
				// it on.
				if j == 1 {
					fields = []string{format(saw, header, bit(j+4), bit(j+8))}
					firstOwnLine = true
				}
				continue
			}
			elem := format(saw, header, bit(j+4), bit(j+8))
			if bit(j+12) || len(fields) == 0 {
				fields = append(fields, elem)
				if j == 1 {
					firstOwnLine = true
				}
			} else {
				fields[len(fields)-1] += ", " + elem
				if j == 1 && len(fields) > clientLines {
					firstOwnLine = true
				}
			}
		}

		key := r.Key(peer, fields)
		allowed := []string{r.Group(peerAddr)}
		for _, h := range hops[:k] {
			allowed = append(allowed, r.Group(h))
		}
		if !slices.Contains(allowed, key) {
			t.Fatalf("%s behind %d proxies, peer %s, fields %q: key %s is none of the peer and the appended addresses %v",
				header, k, peer, fields, key, allowed)
		}
		if (k == 0 || header != Forwarded || firstOwnLine) && key != r.Group(real) {
			t.Fatalf("%s behind %d proxies, peer %s, fields %q: key %s, want the client's %s", header, k, peer, fields, key, r.Group(real))
		}
	})
}

// format writes addr as a proxy writes it in header: with a port when
// port, with another parameter around it (Forwarded) when extra.
func format(addr netip.Addr, header string, port, extra bool) string {
	s := addr.String()
	switch {
	case port:
		s = netip.AddrPortFrom(addr, 443).String()
	case addr.Is6() && header == Forwarded:
		s = "[" + s + "]"
	}
	if header != Forwarded {
		return s
	}
	if port || addr.Is6() {
		s = `"` + s + `"`
	}
	if extra {
		return "proto=https;For=" + s + ";by=_edge"
	}
	return "for=" + s
}
