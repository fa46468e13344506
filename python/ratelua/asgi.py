"""An ASGI middleware (plain ASGI 3; usable with Starlette or FastAPI, no
framework required) with the same fields as ratelua's Go ratehttp: the IETF
RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers),
Retry-After, an RFC 9457 problem+json body on 429 and 503, and the same
trusted-proxy rules for the client's address.

    app = RateLimitMiddleware(app, Limit(logins, name="login"),
                              trusted_proxies=["10.0.0.0/8"])

Use the limiters of ratelua.aio (a sync limiter would block the event loop).
"""

import asyncio
import inspect
import json
import math
import time
from datetime import timedelta
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence

from .clientaddr import OptionError, Resolver
from .errors import RateluaError

MAX_SF_INTEGER = 999_999_999_999_999
QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded"
HEADERS = ("ietf", "ietf+legacy", "none")
_OPTION_NAMES = {"TrustedProxies": "trusted_proxies", "ProxyHeader": "proxy_header", "IPv4Prefix": "ipv4_prefix", "IPv6Prefix": "ipv6_prefix"}


@dataclass
class Limit:
    """One limiter on the routes the middleware wraps.

    name names the limiter's policy (a limiter of several limits names limit
    i "<name>-<its window>", e.g. login-5s and login-1h) unless names lists
    one name per limit. key maps the ASGI scope to an event key (None: the
    limit does not apply); None means the client's address. cost maps the
    scope to the events a request counts for (below 1: free). exempt lists
    keys the limit never applies to.

    reserve (instead of cost) maps the scope to an estimate for a cost known
    only after the work (LLM tokens, response bytes): the limit reserves it
    (the limiter must take reserve: token_bucket v7), and once the app has
    ended — its response sent, an error raised, or the client gone — settles
    with what the app reported by ratelua.asgi.settle(scope, actual), or
    with the estimate when it reported nothing (the reservation stays spent).
    lifetime is the reservation's (None: the limiter's default, 5 minutes):
    longer than the longest request."""

    limiter: Any
    name: str = ""
    names: Optional[Sequence[str]] = None
    key: Optional[Callable[[dict], Optional[str]]] = None
    cost: Optional[Callable[[dict], int]] = None
    exempt: Sequence[str] = ()
    reserve: Optional[Callable[[dict], int]] = None
    lifetime: Any = None
    policies: List["_Policy"] = field(default_factory=list, init=False, repr=False)


#: The scope entry holding a request's reservations (see settle).
SCOPE_KEY = "ratelua.reservations"


class _Reservations:
    """The reservations of one request, and the actual costs reported."""

    def __init__(self):
        self.held: List[tuple] = []  # (Limit, reservation)
        self.actual: dict = {}  # name (None: every limit) -> actual cost


def settle(scope: dict, actual: int, name: Optional[str] = None) -> None:
    """Report the actual cost of the request whose scope this is, for every
    limit that reserved for it (or only for the limit named name). The
    middleware settles with it once the app has ended; a later report
    replaces an earlier one. A route whose limits reserved nothing (an
    estimate below 1, an exempt key) takes the report and sends nothing.
    ValueError when no RateLimitMiddleware with a reserve wraps the app
    (nothing would settle); LimitError for an actual that is not an int
    in [0, 2^52]."""
    from .reservation import check_actual

    check_actual(actual)
    held = scope.get(SCOPE_KEY)
    if not isinstance(held, _Reservations):
        raise ValueError("ratelua.asgi.settle: this request passed no RateLimitMiddleware whose limits reserve "
                         "(Limit(reserve=...)): nothing would settle its cost")
    held.actual[name] = actual


@dataclass
class _Policy:
    name: str
    item: str
    quota: int
    window_us: int


class ConfigError(RateluaError, ValueError):
    """A mistake in the middleware's options or limits."""


def short(us: int) -> str:
    """A window the short way (5s, 1h, 1h30m), as the Go API names policies."""
    if us > 0 and us % 1_000_000 == 0:
        s = us // 1_000_000
        h, m, s = s // 3600, s % 3600 // 60, s % 60
        return (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s else "")
    return _go_duration(us)


def _go_duration(us: int) -> str:
    """Go's time.Duration.String for a whole number of microseconds."""
    if us == 0:
        return "0s"
    sign, us = ("-", -us) if us < 0 else ("", us)
    if us < 1000:
        return f"{sign}{us}µs"
    if us < 1_000_000:
        return sign + _frac(us, 1000) + "ms"
    h, rest = divmod(us, 3_600_000_000)
    m, rest = divmod(rest, 60_000_000)
    out = sign
    if h:
        out += f"{h}h"
    if h or m:
        out += f"{m}m"
    return out + _frac(rest, 1_000_000) + "s"


def _frac(v: int, unit: int) -> str:
    whole, frac = divmod(v, unit)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _ceil_seconds(us: int) -> int:
    return min(-(-us // 1_000_000), MAX_SF_INTEGER)


def _sf_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _check_name(name: str) -> Optional[str]:
    if not name:
        return "is empty"
    for i, c in enumerate(name.encode("utf-8")):
        if c < 0x20 or c > 0x7E:
            return f"has byte {c:#04x} at {i}: an sf-string holds printable ASCII only"
    return None


def problem_body(p: dict) -> bytes:
    """JSON as Go's encoding/json writes it (HTML-safe), and a newline."""
    text = json.dumps(p, separators=(",", ":"), ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text.encode() + b"\n"


class RateLimitMiddleware:
    """Limits the HTTP requests of an ASGI app; see the module's doc. The
    limits come as arguments or as limits=[...] (Starlette's add_middleware
    takes keywords only).

    Options: trusted_proxies (addresses and networks of the reverse proxies
    whose proxy_header is read), proxy_header ("X-Forwarded-For",
    "Forwarded" or "X-Real-IP"), ipv4_prefix and ipv6_prefix (0: 32 and 64),
    headers ("ietf", "ietf+legacy" or "none"), skip (scope -> bool: no limit,
    no field), on_error (scope, error), clock (for X-RateLimit-Reset; seconds
    since the epoch)."""

    def __init__(self, app, *args: Limit, limits: Sequence[Limit] = (), trusted_proxies: Sequence[str] = (), proxy_header: str = "X-Forwarded-For",
                 ipv4_prefix: int = 0, ipv6_prefix: int = 0, headers: str = "ietf",
                 skip: Optional[Callable[[dict], bool]] = None,
                 on_error: Optional[Callable[[dict, Exception], None]] = None,
                 clock: Callable[[], float] = time.time):
        limits = tuple(args) + tuple(limits)
        if not limits:
            raise ConfigError("ratelua.asgi: invalid configuration: no limit")
        if headers not in HEADERS:
            raise ConfigError(f"ratelua.asgi: invalid configuration: headers {headers!r} is not one of {', '.join(HEADERS)}")
        self.app, self.skip, self.on_error, self.clock, self.headers = app, skip, on_error, clock, headers
        try:
            self.clients = Resolver(trusted_proxies, proxy_header, ipv4_prefix, ipv6_prefix)
        except OptionError as err:
            where = _OPTION_NAMES[err.option] + (f"[{err.index}]" if err.index >= 0 else "")
            raise ConfigError(f"ratelua.asgi: invalid configuration: {where} {err.reason}") from err
        self.proxy_header = self.clients.header.lower().encode()
        seen, items = {}, []
        self.limits = list(limits)
        for i, l in enumerate(self.limits):
            self._build(i, l)
            for p in l.policies:
                if p.name in seen:
                    j = seen[p.name]
                    if j == i:
                        raise ConfigError(f"ratelua.asgi: invalid configuration: limit {i} names two policies {p.name!r}: set names")
                    raise ConfigError(f"ratelua.asgi: invalid configuration: limits {j} and {i} both name a policy {p.name!r}")
                seen[p.name] = i
                items.append(f"{p.item};q={p.quota};w={max(1, _ceil_seconds(p.window_us))}")
        self.policy = ", ".join(items)

    @staticmethod
    def _build(i: int, l: Limit) -> None:
        if l.limiter is None:
            raise ConfigError(f"ratelua.asgi: invalid configuration: limit {i} has no limiter")
        if l.reserve is not None:
            if l.cost is not None:
                raise ConfigError(f"ratelua.asgi: invalid configuration: limit {i} has both cost and reserve: keep one")
            if not getattr(l.limiter, "reserves", False):
                raise ConfigError(f"ratelua.asgi: invalid configuration: limit {i} reserves, but its limiter "
                                  f"({getattr(l.limiter, 'script', '?')}) does not take reserve and settle "
                                  "(token_bucket v7 does)")
        elif l.lifetime is not None:
            raise ConfigError(f"ratelua.asgi: invalid configuration: limit {i} has a lifetime but no reserve")
        count = l.limiter.limits
        names = list(l.names) if l.names is not None else None
        if names is not None and len(names) != count:
            raise ConfigError(f"ratelua.asgi: invalid configuration: limit {i} has {len(names)} names for a limiter of {count} limits")
        if names is None and not l.name:
            raise ConfigError(f"ratelua.asgi: invalid configuration: limit {i} has no name")
        if names is None:
            names = [l.name] if count == 1 else [f"{l.name}-{short(_window_us(l.limiter, j))}" for j in range(count)]
        l.policies = []
        for j, name in enumerate(names):
            why = _check_name(name)
            if why:
                raise ConfigError(f"ratelua.asgi: invalid configuration: limit {i}: policy name {name!r} {why}")
            l.policies.append(_Policy(name, _sf_string(name), l.limiter.quota(j)[0], _window_us(l.limiter, j)))

    # The client's address.

    def client_key(self, scope: dict) -> str:
        """The key of the request's client address: the peer, or the
        rightmost untrusted hop of proxy_header when the peer is a trusted
        proxy, grouped by the prefix lengths: 192.0.2.1, 2001:db8:1:2::/64.
        The rule is Go's clientaddr's (ratelua.clientaddr), so Go, Python
        and Node services key a client alike."""
        peer = (scope.get("client") or ("", 0))[0]
        fields = [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == self.proxy_header]
        return self.clients.key(peer or "", fields)

    # The request.

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or (self.skip is not None and self.skip(scope)):
            await self.app(scope, receive, send)
            return
        rep = _Report()
        held = None
        if any(l.reserve is not None for l in self.limits):
            held = scope.get(SCOPE_KEY)
            if not isinstance(held, _Reservations):  # an outer middleware's, shared
                held = scope[SCOPE_KEY] = _Reservations()
        mine: List[tuple] = []
        ran = [False]
        try:
            await self._limit(scope, receive, send, rep, held, mine, ran)
        finally:
            if mine:
                await self._settle(scope, held, mine, ran[0])

    async def _limit(self, scope, receive, send, rep, held, mine, ran):
        """Decide the request by every limit, then run the app (ran[0] set
        first); mine collects the reservations taken, settled by the caller
        whatever happens."""
        client = None
        for l in self.limits:
            if l.key is None:
                if client is None:
                    client = self.client_key(scope)
                key = client
            else:
                key = l.key(scope)
                if key is None:
                    continue
            if key in l.exempt:
                continue
            n = 1
            if l.cost is not None or l.reserve is not None:
                n = (l.cost or l.reserve)(scope)
                if n < 1:
                    continue
            try:
                if l.reserve is not None:
                    reservation = l.limiter.reserve(key, n, lifetime=l.lifetime)
                    if inspect.isawaitable(reservation):
                        reservation = await reservation
                    res = reservation.result
                    if reservation.allowed:
                        mine.append((l, reservation))
                        held.held.append((l, reservation))
                else:
                    res = l.limiter.allow_n(key, n)
                    if inspect.isawaitable(res):
                        res = await res
            except RateluaError as err:
                if self.on_error is not None:
                    self.on_error(scope, err)
                await self._problem(send, 503, {"type": "about:blank", "title": "Service Unavailable", "status": 503,
                                                "detail": "the rate limiter could not decide this request"},
                                    self._fields(rep, False))
                return
            if res.error is not None:
                if self.on_error is not None:
                    self.on_error(scope, res.error)
                continue
            rep.consider(l, res)
            if not res.allowed:
                await self._deny(send, rep, n)
                return
        fields = self._fields(rep, False)

        async def send_with_fields(message):
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + fields
            await send(message)

        ran[0] = True
        await self.app(scope, receive, send_with_fields)

    async def _settle(self, scope, held: "_Reservations", mine: List[tuple], ran: bool) -> None:
        """Settle this middleware's reservations with the cost reported for
        their limit's name, else for every limit, else their estimate (the
        app ran: the reservation stays spent); cancel them when the app never
        ran (another limit denied the request, or could not decide it). A
        settle that fails goes to on_error: the request is over. The settles
        run to their end even when the request's task is cancelled (a client
        gone), which is raised after them."""
        cancelled = None
        for l, reservation in mine:
            actual = held.actual.get(l.name, held.actual.get(None, reservation.estimate)) if ran else 0
            try:
                done = reservation.settle(actual)
                if inspect.isawaitable(done):
                    await asyncio.shield(asyncio.ensure_future(done))
            except asyncio.CancelledError as err:
                cancelled = err
            except RateluaError as err:
                if self.on_error is not None:
                    self.on_error(scope, err)
        if cancelled is not None:
            raise cancelled

    def _fields(self, rep: "_Report", denied: bool) -> list:
        if self.headers == "none":
            return []
        out = [(b"ratelimit-policy", self.policy.encode())]
        if rep.p is None:
            return out
        value = f"{rep.p.item};r={min(rep.res.remaining, MAX_SF_INTEGER)}"
        if rep.wait_us >= 0:
            value += f";t={_ceil_seconds(rep.wait_us)}"
        out.append((b"ratelimit", value.encode()))
        if denied and rep.wait_us >= 0:
            out.append((b"retry-after", str(_ceil_seconds(rep.wait_us)).encode()))
        if self.headers == "ietf+legacy":
            out.append((b"x-ratelimit-limit", str(rep.p.quota).encode()))
            out.append((b"x-ratelimit-remaining", str(min(rep.res.remaining, MAX_SF_INTEGER)).encode()))
            if rep.wait_us >= 0:
                out.append((b"x-ratelimit-reset", str(math.ceil(self.clock() + rep.wait_us / 1e6)).encode()))
        return out

    async def _deny(self, send, rep: "_Report", cost: int) -> None:
        p, res = rep.p, rep.res
        body = {"type": QUOTA_EXCEEDED, "title": "Quota Exceeded", "status": 429}
        if self.headers != "none":
            if res.retry_after_us < 0:
                body["detail"] = (f"this request costs {cost}, more than policy {_go_quote(p.name)} allows "
                                  f"({p.quota}): it can never pass")
            else:
                body["detail"] = f"policy {_go_quote(p.name)} allows this request in {_ceil_seconds(res.retry_after_us)} s"
        body["violated-policies"] = [p.name]
        await self._problem(send, 429, body, self._fields(rep, True))

    @staticmethod
    async def _problem(send, status: int, body: dict, fields: list) -> None:
        data = problem_body(body)
        headers = fields + [(b"content-type", b"application/problem+json"),
                            (b"content-length", str(len(data)).encode()),
                            (b"x-content-type-options", b"nosniff")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})


def _window_us(limiter, i: int) -> int:
    """The window of limit i of limiter in microseconds."""
    return limiter.quota(i)[1] // timedelta(microseconds=1)


class _Report:
    """The limit closest to running out among the results so far."""

    def __init__(self):
        self.p, self.res, self.wait_us = None, None, -1

    def consider(self, l: Limit, res) -> None:
        if res.limit < 0 or res.limit >= len(l.policies):
            return
        p = l.policies[res.limit]
        wait = _effective_window(p, res)
        if self.p is not None:
            if res.allowed != self.res.allowed:
                if res.allowed:
                    return
            elif not res.allowed:
                if not _longer(wait, self.wait_us):
                    return
            elif res.remaining != self.res.remaining:
                if res.remaining > self.res.remaining:
                    return
            elif not _longer(wait, self.wait_us):
                return
        self.p, self.res, self.wait_us = p, res, wait


def _longer(a: int, b: int) -> bool:
    if b < 0:
        return False
    if a < 0:
        return True
    return a > b


def _effective_window(p: _Policy, res) -> int:
    if not res.allowed:
        return -1 if res.retry_after_us < 0 else res.retry_after_us
    return min(p.window_us, res.reset_after_us)
