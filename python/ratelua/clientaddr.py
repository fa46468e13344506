"""Client addresses behind trusted reverse proxies, by the rule of Go's
``clientaddr`` package, step for step, so that a Go, a Python and a Node
service key one client the same way (testdata/clientaddr.json, written by Go,
is the proof; a differential fuzz compares the three).

The peer (the address the connection came from) is the client unless it is
one of the trusted proxies. Then the field the proxies write
(X-Forwarded-For, Forwarded or X-Real-IP) is read from the right: the
rightmost address that is not a trusted proxy is the client. A value that is
not an address ends the walk at the trusted proxy that wrote it. Forwarded is
parsed strictly (RFC 7239 with RFC 9110's lists and quoted strings) one field
line at a time: a line that does not parse (an unbalanced quote, a stray
byte, a parameter twice) ends the walk there, so that text a client wrote can
never swallow, or pose as, what a proxy appended after it.

Field values are text as ASGI servers give them: one character per byte
(latin-1). Addresses are parsed as Go's net/netip parses them, not by
``ipaddress`` (whose rules differ at the edges: leading zeros, scope ids,
whitespace).
"""

from typing import List, Optional, Sequence, Tuple

__all__ = ["Resolver", "OptionError", "parse_addr", "format_addr"]

XFORWARDEDFOR = "X-Forwarded-For"
FORWARDED = "Forwarded"
XREALIP = "X-Real-Ip"
_HEADERS = {"": XFORWARDEDFOR, "x-forwarded-for": XFORWARDEDFOR, "forwarded": FORWARDED, "x-real-ip": XREALIP}

_MAPPED = bytes(10) + b"\xff\xff"


class OptionError(ValueError):
    """A Resolver option that is wrong. option names it as Go's Options
    does (TrustedProxies, ProxyHeader, IPv4Prefix, IPv6Prefix), index is the
    position in TrustedProxies (else -1), reason says what is wrong."""

    def __init__(self, option: str, index: int, reason: str):
        self.option, self.index, self.reason = option, index, reason
        where = f"{option}[{index}]" if index >= 0 else option
        super().__init__(f"clientaddr: invalid option: {where} {reason}")


class Resolver:
    """Finds client addresses with the rules of its options (those of Go's
    clientaddr.Options): trusted_proxies (addresses and networks),
    proxy_header ("X-Forwarded-For", the default, "Forwarded" or
    "X-Real-IP", any case), ipv4_prefix and ipv6_prefix (0 means 32 and
    64). Raises OptionError naming a wrong option."""

    def __init__(self, trusted_proxies: Sequence[str] = (), proxy_header: str = XFORWARDEDFOR,
                 ipv4_prefix: int = 0, ipv6_prefix: int = 0):
        for name, v in (("IPv4Prefix", ipv4_prefix), ("IPv6Prefix", ipv6_prefix)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise OptionError(name, -1, f"must be an int, got {type(v).__name__}")
        self.v4bits = ipv4_prefix or 32
        self.v6bits = ipv6_prefix or 64
        if not 1 <= self.v4bits <= 32:
            raise OptionError("IPv4Prefix", -1, f"must be 1 to 32 (0 means 32), got {ipv4_prefix}")
        if not 1 <= self.v6bits <= 128:
            raise OptionError("IPv6Prefix", -1, f"must be 1 to 128 (0 means 64), got {ipv6_prefix}")
        if isinstance(trusted_proxies, (str, bytes)):
            raise OptionError("TrustedProxies", -1, "must be a list of addresses and networks, got a string")
        self.trusted: List[Tuple[bytes, int]] = []
        for i, s in enumerate(trusted_proxies):
            if not isinstance(s, str):
                raise OptionError("TrustedProxies", i, f"must be a str, got {type(s).__name__}")
            p = parse_prefix(s)
            if p is None:
                raise OptionError("TrustedProxies", i, f"{_quote(s)} is neither an address nor a network")
            self.trusted.append(p)
        header = _HEADERS.get(proxy_header.lower()) if isinstance(proxy_header, str) else None
        if header is None:
            raise OptionError("ProxyHeader", -1, f"{_quote(str(proxy_header))} must be X-Forwarded-For, Forwarded or X-Real-IP")
        self.header = header

    def is_trusted(self, addr: bytes) -> bool:
        """Whether addr (4 or 16 bytes) is one of the trusted proxies."""
        return any(len(p) == len(addr) and _mask(addr, bits) == p for p, bits in self.trusted)

    def addr(self, peer: str, fields: Sequence[str]) -> Optional[bytes]:
        """The client's address (4 or 16 bytes), or None when peer holds no
        IP address. peer is "192.0.2.1", "192.0.2.1:4711" or
        "[2001:db8::1]:443"; fields are the values of the header in the
        order received, one per field line, read only when the peer is
        trusted."""
        client = parse_addr(peer)
        if client is None or not self.is_trusted(client):
            return client
        for line in reversed(fields):
            hops = self._hops(line)
            if hops is None:
                return client
            for hop in reversed(hops):
                a = node_addr(hop) if self.header == FORWARDED else parse_addr(hop)
                if a is None:
                    return client
                client = a
                if not self.is_trusted(a):
                    return a
        return client

    def _hops(self, line: str) -> Optional[List[str]]:
        if self.header == FORWARDED:
            return forwarded_for(line)
        return [h for h in (h.strip(" \t") for h in line.split(",")) if h]

    def key(self, peer: str, fields: Sequence[str]) -> str:
        """The key of the client's address grouped by the prefix lengths:
        "192.0.2.1", "2001:db8:1:2::/64"; a peer that holds no IP address is
        the key as it is."""
        a = self.addr(peer, fields)
        if a is None:
            return peer
        return self.group(a)

    def group(self, addr: bytes) -> str:
        """addr as a key: itself, or its network at the family's prefix."""
        bits = self.v4bits if len(addr) == 4 else self.v6bits
        if bits == 8 * len(addr):
            return format_addr(addr)
        return f"{format_addr(_mask(addr, bits))}/{bits}"


def _quote(s: str) -> str:
    return repr(s[:64]) + ("..." if len(s) > 64 else "")


def _mask(b: bytes, bits: int) -> bytes:
    out = bytearray(b)
    for i in range(len(out)):
        keep = max(0, min(8, bits - 8 * i))
        out[i] &= (0xFF << (8 - keep)) & 0xFF
    return bytes(out)


def _unmap(b: bytes) -> bytes:
    return b[12:] if len(b) == 16 and b[:12] == _MAPPED else b


# net/netip's parsers.

def _parse_ipv4_fields(s: str) -> Optional[bytes]:
    fields, val, dig, pos = bytearray(4), 0, 0, 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if dig == 1 and val == 0:
                return None  # a leading zero
            val = val * 10 + ord(c) - 48
            dig += 1
            if val > 255:
                return None
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                return None
            if pos == 3:
                return None
            fields[pos] = val
            pos, val, dig = pos + 1, 0, 0
        else:
            return None
    if pos < 3:
        return None
    fields[3] = val
    return bytes(fields)


_HEX = {c: int(c, 16) for c in "0123456789abcdefABCDEF"}


def _parse_ipv6(s: str) -> Optional[Tuple[bytes, str]]:
    zone = ""
    i = s.find("%")
    if i >= 0:
        s, zone = s[:i], s[i + 1:]
        if zone == "":
            return None
    ip = bytearray(16)
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if s == "":
            return bytes(16), zone
    i = 0
    while i < 16:
        off, acc = 0, 0
        while off < len(s) and s[off] in _HEX:
            acc = (acc << 4) + _HEX[s[off]]
            if off > 3 or acc > 0xFFFF:
                return None
            off += 1
        if off == 0:
            return None
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                return None
            if i + 4 > 16:
                return None
            v4 = _parse_ipv4_fields(s)
            if v4 is None:
                return None
            ip[i:i + 4] = v4
            s, i = "", i + 4
            break
        ip[i], ip[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        s = s[off:]
        if s == "":
            break
        if s[0] != ":" or len(s) == 1:
            return None
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                return None
            ellipsis, s = i, s[1:]
            if s == "":
                break
    if s != "":
        return None
    if i < 16:
        if ellipsis < 0:
            return None
        n = 16 - i
        ip[ellipsis + n:16] = ip[ellipsis:i]
        ip[ellipsis:ellipsis + n] = bytes(n)
    elif ellipsis >= 0:
        return None
    return bytes(ip), zone


def parse_ip(s: str) -> Optional[Tuple[bytes, str]]:
    """netip.ParseAddr: the address's bytes (4 or 16, IPv4-mapped kept as
    16) and its zone, or None."""
    for c in s:
        if c == ".":
            v4 = _parse_ipv4_fields(s)
            return None if v4 is None else (v4, "")
        if c == ":":
            return _parse_ipv6(s)
        if c == "%":
            return None
    return None


def _is_digits(s: str) -> bool:
    return s != "" and all("0" <= c <= "9" for c in s)


def parse_addr(s: str) -> Optional[bytes]:
    """An address as proxies write it in X-Forwarded-For and X-Real-IP,
    and as peers are written: 192.0.2.1, 192.0.2.1:8080, 2001:db8::1,
    [2001:db8::1]:8080; IPv4-mapped as IPv4; without a zone."""
    s = s.strip(" \t")
    if s.startswith("["):
        end = s.find("]")
        rest = s[end + 1:] if end >= 0 else ""
        if end < 0 or not (rest == "" or (2 <= len(rest) <= 6 and rest[0] == ":" and _is_digits(rest[1:]))):
            return None
        a = parse_ip(s[1:end])
        if a is None or len(a[0]) == 4:
            return None
        return _unmap(a[0])
    if s.count(":") == 1:  # IPv4 and a port (netip.ParseAddrPort)
        host, port = s.split(":")
        if host == "" or not _is_digits(port) or int(port) > 65535:
            return None
        a = parse_ip(host)
        if a is None or len(a[0]) != 4:
            return None
        return a[0]
    a = parse_ip(s)
    return None if a is None else _unmap(a[0])


# Go's strings.TrimSpace (unicode.IsSpace).
_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def parse_prefix(s: str) -> Optional[Tuple[bytes, int]]:
    """A trusted proxy, a network or one address, as (masked bytes, bits);
    a network of IPv4-mapped addresses of /96 or longer as IPv4."""
    s = s.strip(_SPACE)
    if "/" in s:
        i = s.rfind("/")
        a = parse_ip(s[:i])
        if a is None or a[1] != "":
            return None
        b, bits_s = a[0], s[i + 1:]
        # netip.ParsePrefix: decimal digits, no sign, no leading zero.
        if not _is_digits(bits_s) or (len(bits_s) > 1 and bits_s[0] == "0"):
            return None
        bits = int(bits_s)
        if bits > 8 * len(b):
            return None
        if len(b) == 16 and b[:12] == _MAPPED and bits >= 96:
            b, bits = b[12:], bits - 96
        return _mask(b, bits), bits
    a = parse_ip(s)
    if a is None:
        return None
    b = _unmap(a[0])
    return b, 8 * len(b)


def format_addr(b: bytes) -> str:
    """An address as Go's netip writes it (RFC 5952 for IPv6: the first
    longest run of two or more zero groups as ::)."""
    if len(b) == 4:
        return ".".join(str(x) for x in b)
    if b[:12] == _MAPPED:
        return "::ffff:" + ".".join(str(x) for x in b[12:])
    g = [(b[i] << 8) | b[i + 1] for i in range(0, 16, 2)]
    start, length = -1, 1
    i = 0
    while i < 8:
        if g[i] != 0:
            i += 1
            continue
        j = i
        while j < 8 and g[j] == 0:
            j += 1
        if j - i > length:
            start, length = i, j - i
        i = j
    hexes = [format(x, "x") for x in g]
    if start < 0:
        return ":".join(hexes)
    return ":".join(hexes[:start]) + "::" + ":".join(hexes[start + length:])


# Forwarded (RFC 7239), strictly.

_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _is_qdtext(c: str) -> bool:
    o = ord(c)
    return o == 9 or o == 32 or o == 0x21 or 0x23 <= o <= 0x5B or 0x5D <= o <= 0x7E or o >= 0x80


def _is_quotable(c: str) -> bool:
    o = ord(c)
    return o == 9 or (o >= 0x20 and o != 0x7F)


class _Parser:
    def __init__(self, s: str):
        self.s, self.i = s, 0

    def done(self) -> bool:
        return self.i >= len(self.s)

    def peek(self) -> str:
        return self.s[self.i]

    def skip_ows(self) -> None:
        while not self.done() and self.peek() in " \t":
            self.i += 1

    def element(self) -> Optional[str]:
        seen, hop = set(), ""
        while True:
            self.skip_ows()
            if not self.done() and self.peek() not in ";,":
                pair = self.pair()
                if pair is None:
                    return None
                name, value = pair
                name = name.lower()
                if name in seen:
                    return None
                seen.add(name)
                if name == "for":
                    hop = value
                self.skip_ows()
            if self.done() or self.peek() == ",":
                return hop
            if self.peek() != ";":
                return None
            self.i += 1

    def pair(self) -> Optional[Tuple[str, str]]:
        name = self.token()
        if name == "" or self.done() or self.peek() != "=":
            return None
        self.i += 1
        if not self.done() and self.peek() == '"':
            value = self.quoted()
            return None if value is None else (name, value)
        value = self.token()
        return (name, value) if value != "" else None

    def token(self) -> str:
        start = self.i
        while not self.done() and self.peek() in _TCHAR:
            self.i += 1
        return self.s[start:self.i]

    def quoted(self) -> Optional[str]:
        self.i += 1
        out = []
        while not self.done():
            c = self.peek()
            self.i += 1
            if c == '"':
                return "".join(out)
            if c == "\\":
                if self.done() or not _is_quotable(self.peek()):
                    return None
                out.append(self.peek())
                self.i += 1
            elif _is_qdtext(c):
                out.append(c)
            else:
                return None
        return None  # no closing quote


def forwarded_for(line: str) -> Optional[List[str]]:
    """The for= value of each element of one Forwarded field line, left to
    right, unquoted ("" for an element without one); None when the line is
    not well-formed."""
    p = _Parser(line)
    hops = []
    p.skip_ows()
    while not p.done():
        if p.peek() == ",":
            p.i += 1
            p.skip_ows()
            continue
        hop = p.element()
        if hop is None:
            return None
        hops.append(hop)
        p.skip_ows()
        if p.done():
            break
        if p.peek() != ",":
            return None
        p.i += 1
        p.skip_ows()
    return hops


def _is_node_port(s: str) -> bool:
    if s == "":
        return False
    if s[0] == "_":
        return len(s) > 1 and all(c.isascii() and (c.isalnum() or c in "._-") for c in s[1:])
    return len(s) <= 5 and _is_digits(s)


def node_addr(v: str) -> Optional[bytes]:
    """The address of a for= value, strictly (RFC 7239, 6): IPv4address
    [":" node-port] or "[" IPv6address "]" [":" node-port]."""
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return None
        host, port = v[1:end], v[end + 1:]
    else:
        host, sep, rest = v.partition(":")
        port = ":" + rest if sep else ""
    if port != "" and (port[0] != ":" or not _is_node_port(port[1:])):
        return None
    a = parse_ip(host)
    if a is None or a[1] != "" or (len(a[0]) == 4) != (not v.startswith("[")):
        return None
    return _unmap(a[0])
