"""The ASGI middleware: with Starlette, on a real server, and its
client-address rules without one."""

import uuid
from datetime import datetime, timezone

import pytest

import ratelua
import ratelua.aio
from ratelua.asgi import ConfigError, Limit, RateLimitMiddleware, short

from conftest import async_client

starlette = pytest.importorskip("starlette")
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import PlainTextResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402


def ok(request):
    return PlainTextResponse("ok")


def test_policy_names():
    assert [short(us) for us in (5_000_000, 3_600_000_000, 5_400_000_000, 1_500_000, 250_000, 1500)] == \
        ["5s", "1h", "1h30m", "1.5s", "250ms", "1.5ms"]


class Fake:
    limits = 1

    def quota(self, i):
        from datetime import timedelta
        return 5, timedelta(seconds=60)


def mw(**options):
    return RateLimitMiddleware(ok, Limit(Fake(), name="api"), **options)


@pytest.mark.parametrize("peer,headers,options,want", [
    ("192.0.2.1", [], {}, "192.0.2.1"),
    ("2001:db8:1:2:3::1", [], {}, "2001:db8:1:2::/64"),
    ("10.0.0.1", [(b"x-forwarded-for", b"203.0.113.9, 10.0.0.2")], {"trusted_proxies": ["10.0.0.0/8"]}, "203.0.113.9"),
    ("10.0.0.1", [(b"x-forwarded-for", b"203.0.113.9")], {}, "10.0.0.1"),
    ("10.0.0.1", [(b"x-forwarded-for", b"198.51.100.1, junk, 10.0.0.3")], {"trusted_proxies": ["10.0.0.0/8"]}, "10.0.0.3"),
    ("10.0.0.1", [(b"forwarded", b'for="[2001:db8::1]:80";proto=https')],
     {"trusted_proxies": ["10.0.0.1"], "proxy_header": "Forwarded"}, "2001:db8::/64"),
    ("::ffff:192.0.2.7", [], {"ipv4_prefix": 24}, "192.0.2.0/24"),
])
def test_client_key(peer, headers, options, want):
    assert mw(**options).client_key({"client": (peer, 1234), "headers": headers}) == want


def test_config_errors():
    with pytest.raises(ConfigError, match="trusted_proxies\\[0\\]"):
        mw(trusted_proxies=["nope"])
    with pytest.raises(ConfigError, match="proxy_header"):
        mw(proxy_header="X-Client")
    with pytest.raises(ConfigError, match="no name"):
        RateLimitMiddleware(ok, Limit(Fake()))


def test_login_with_starlette(target):
    clock_now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    prefix = "asgi" + uuid.uuid4().hex[:8]
    client = async_client(target)
    logins = ratelua.aio.SlidingWindow(client, ratelua.Window(1, 5, 1), ratelua.Window(5, 3600, 600),
                                       prefix=prefix, clock=lambda: clock_now)
    app = Starlette(routes=[Route("/login", ok, methods=["POST"])])
    app.add_middleware(RateLimitMiddleware, limits=[Limit(logins, name="login")])
    with TestClient(app) as http:
        first = http.post("/login")
        assert first.status_code == 200 and first.text == "ok"
        assert first.headers["ratelimit-policy"] == '"login-5s";q=1;w=5, "login-1h";q=5;w=3600'
        assert first.headers["ratelimit"] == '"login-5s";r=0;t=5'
        second = http.post("/login")
        assert second.status_code == 429 and second.headers["retry-after"] == "5"
        assert second.headers["content-type"] == "application/problem+json"
        assert second.json() == {"type": "https://iana.org/assignments/http-problem-types#quota-exceeded",
                                 "title": "Quota Exceeded", "status": 429,
                                 "detail": 'policy "login-5s" allows this request in 5 s',
                                 "violated-policies": ["login-5s"]}


def behind_proxy(app, peer="10.0.0.1"):
    """The connection comes from a reverse proxy at peer (Starlette's
    TestClient says "testclient")."""
    async def wrapped(scope, receive, send):
        await app(dict(scope, client=(peer, 4711)), receive, send)
    return wrapped


def test_forwarded_smuggling_is_limited(target):
    """Issue 30, H1: at 1 request a minute, a client behind a trusted proxy
    that writes Forwarded: for=198.51.100.N;x=" (the proxy appending
    , for=<real>) is limited as an honest one: 200 429 429 429 429, not its
    own choice of key each time."""
    clock_now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for kind in ("honest", "smuggling"):
        client = async_client(target)  # one per TestClient: each runs its own event loop
        prefix = "h1" + uuid.uuid4().hex[:8]
        limiter = ratelua.aio.SlidingWindow(client, ratelua.Window(1, 60, 1), prefix=prefix, clock=lambda: clock_now)
        app = Starlette(routes=[Route("/", ok)])
        app.add_middleware(RateLimitMiddleware, limits=[Limit(limiter, name="api")],
                           trusted_proxies=["10.0.0.0/8"], proxy_header="Forwarded")
        statuses = []
        with TestClient(behind_proxy(app)) as http:
            for n in range(1, 6):
                sent = f'for=198.51.100.{n};x="' if kind == "smuggling" else f"for=198.51.100.{n}"
                # What the trusted proxy forwards: the client's value and its own element.
                statuses.append(http.get("/", headers={"forwarded": sent + ", for=203.0.113.9"}).status_code)
        assert statuses == [200, 429, 429, 429, 429], (kind, statuses)


@pytest.mark.parametrize("server_rewrote,options,want", [
    # The server's own proxy handling (uvicorn --proxy-headers with
    # --forwarded-allow-ips, hypercorn's ProxyFixMiddleware) already put the
    # client in scope["client"]: the middleware keys it as it is.
    (True, {}, "203.0.113.7"),
    # The server left the proxy's address: trusted_proxies reads the field
    # by the rule shared with Go and Node.
    (False, {"trusted_proxies": ["10.0.0.0/8"]}, "203.0.113.7"),
    (False, {}, "10.0.0.1"),
])
def test_the_servers_proxy_handling(server_rewrote, options, want):
    """python/README.md's "Client addresses behind proxies": ASGI frameworks
    have no trust-proxy setting; the peer is scope["client"] as the server
    wrote it."""
    peer = "203.0.113.7" if server_rewrote else "10.0.0.1"
    scope = {"client": (peer, 4711), "headers": [(b"x-forwarded-for", b"203.0.113.7")]}
    assert mw(**options).client_key(scope) == want
