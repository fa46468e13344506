"""The ASGI middleware's reserve, then settle (Limit(reserve=...) and
ratelua.asgi.settle) on real servers, the app called as an ASGI server
would: the reservation settles with what the app reported when it ends,
raises, or is cancelled (a client gone), and is cancelled when the request
never reaches the app. Tokens per minute: a bucket of 10 refilled 10 per
minute, the caller's clock standing still."""

import asyncio
import uuid
from datetime import datetime, timezone

import pytest

import ratelua
import ratelua.aio
from ratelua.asgi import ConfigError, Limit, RateLimitMiddleware, settle

from conftest import async_client

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def tokens_of(scope):
    """The request's estimate: its max_tokens query parameter."""
    return int(dict(p.split("=") for p in scope["query_string"].decode().split("&"))["max_tokens"])


async def call(app, max_tokens=8, who="203.0.113.7"):
    """One request through app; its response start and body messages."""
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/v1/chat", "query_string": f"max_tokens={max_tokens}".encode(),
             "client": (who, 4711), "headers": []}
    await app(scope, receive, send)
    return sent


def model(used=None, fail=False, hang=None):
    """A fake model: answers 200 and reports used tokens (None: nothing
    reported), then raises if fail, or waits on hang (a client gone while
    it streams)."""
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if used is not None:
            settle(scope, used)
        if hang is not None:
            hang.set_result(None)
            await asyncio.Event().wait()
        if fail:
            raise RuntimeError("the model failed")
        await send({"type": "http.response.body", "body": b"done"})
    return app


@pytest.fixture
async def tpm(target):
    client = async_client(target)
    yield ratelua.aio.TokenBucket(client, ratelua.Bucket(10, 10, 60), prefix="asgi" + uuid.uuid4().hex[:8], clock=lambda: T0)
    await client.close()


def limited(app, tpm, **options):
    return RateLimitMiddleware(app, Limit(tpm, name="tpm", reserve=tokens_of), **options)


async def test_the_reported_cost_settles(tpm):
    sent = await call(limited(model(used=3), tpm))
    start = sent[0]
    assert start["status"] == 200
    assert dict(start["headers"])[b"ratelimit"] == b'"tpm";r=2;t=48', "the fields are the reserve's (8 missing: 48 s to full)"
    assert (await tpm.peek("203.0.113.7")).remaining == 7, "8 reserved, 3 used: 5 refunded"


async def test_an_overrun_reported_is_charged(tpm):
    await call(limited(model(used=13), tpm))
    r = await tpm.peek("203.0.113.7")
    assert not r.allowed and r.retry_after_us == 24_000_000, r
    denied = await call(limited(model(used=1), tpm), max_tokens=1)
    assert denied[0]["status"] == 429


async def test_nothing_reported_keeps_the_estimate_spent_and_frees_the_id(tpm):
    await call(limited(model(), tpm))
    assert (await tpm.peek("203.0.113.7")).remaining == 2
    assert await tpm.client.type(tpm.key("203.0.113.7")) == b"string", "settled: no reservation left open"


async def test_an_app_that_raises_still_settles(tpm):
    with pytest.raises(RuntimeError, match="the model failed"):
        await call(limited(model(used=2, fail=True), tpm))
    assert (await tpm.peek("203.0.113.7")).remaining == 8


async def test_a_client_gone_still_settles(tpm):
    hang = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(call(limited(model(used=4, hang=hang), tpm)))
    await hang  # the app has reported its cost and is streaming
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await tpm.peek("203.0.113.7")).remaining == 6


async def test_a_request_denied_by_another_limit_cancels_its_reservation(tpm):
    per_request = ratelua.aio.SlidingWindow(tpm.client, ratelua.Window(1, 60, 1), prefix=tpm.prefix + "r", clock=lambda: T0)
    app = RateLimitMiddleware(model(used=1), Limit(tpm, name="tpm", reserve=tokens_of), Limit(per_request, name="rpm"))
    assert (await call(app))[0]["status"] == 200
    assert (await tpm.peek("203.0.113.7")).remaining == 9
    assert (await call(app, max_tokens=5))[0]["status"] == 429
    assert (await tpm.peek("203.0.113.7")).remaining == 9, "the app never ran: the 5 reserved came back"


async def test_a_report_names_its_limit(tpm):
    per_day = ratelua.aio.TokenBucket(tpm.client, ratelua.Bucket(100, 100, 86400), prefix=tpm.prefix + "d", clock=lambda: T0)

    async def app(scope, receive, send):
        settle(scope, 1, name="tpm")
        settle(scope, 6)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    both = RateLimitMiddleware(app, Limit(tpm, name="tpm", reserve=tokens_of), Limit(per_day, name="tpd", reserve=tokens_of))
    await call(both)
    assert (await tpm.peek("203.0.113.7")).remaining == 9
    assert (await per_day.peek("203.0.113.7")).remaining == 94


async def test_a_free_request_reserves_nothing(tpm):
    await call(limited(model(used=5), tpm), max_tokens=0)
    assert (await tpm.peek("203.0.113.7")).remaining == 10


def test_settle_outside_the_middleware_and_bad_reports():
    with pytest.raises(ValueError, match="no RateLimitMiddleware"):
        settle({"type": "http"}, 1)
    with pytest.raises(ratelua.LimitError):
        settle({"type": "http"}, -1)


def test_config_errors():
    import redis.asyncio
    client = redis.asyncio.Redis()  # never connected
    tb = ratelua.aio.TokenBucket(client, ratelua.Bucket(10, 10, 60))
    sw = ratelua.aio.SlidingWindow(client, ratelua.Window(1, 60, 1), version=6)
    with pytest.raises(ConfigError, match="both cost and reserve"):
        RateLimitMiddleware(model(), Limit(tb, name="t", reserve=tokens_of, cost=tokens_of))
    with pytest.raises(ConfigError, match=r"limit 0 reserves, but its limiter \(sliding_window@v6\)"):
        RateLimitMiddleware(model(), Limit(sw, name="s", reserve=tokens_of))
    with pytest.raises(ConfigError, match="lifetime but no reserve"):
        RateLimitMiddleware(model(), Limit(tb, name="t", lifetime=60))


def test_a_starlette_route_reports_its_cost(target):
    """As python/README.md says: a route reports with request.scope."""
    starlette = pytest.importorskip("starlette")  # noqa: F841
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    async def chat(request):
        settle(request.scope, 2)
        return PlainTextResponse("done")

    client = async_client(target)  # one per TestClient: it runs its own event loop
    tpm = ratelua.aio.TokenBucket(client, ratelua.Bucket(10, 10, 60), prefix="asgi" + uuid.uuid4().hex[:8], clock=lambda: T0)
    app = Starlette(routes=[Route("/v1/chat", chat, methods=["POST"])])
    app.add_middleware(RateLimitMiddleware, limits=[Limit(tpm, name="tpm", reserve=tokens_of)])
    with TestClient(app) as http:
        r = http.post("/v1/chat?max_tokens=8")
        assert r.status_code == 200 and r.headers["ratelimit"] == '"tpm";r=2;t=48'
        # The settle has run when the app ended, before the next request.
        r = http.post("/v1/chat?max_tokens=8")
        assert r.status_code == 200 and r.headers["ratelimit"] == '"tpm";r=0;t=60', r.headers["ratelimit"]
