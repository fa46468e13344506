"""State keys, exactly as the Go API builds them:
``<prefix>:{<escaped event key>}:<script>:v<state version>:<limits hash>``."""

import hashlib
from typing import List, Union

from .errors import LimitError

#: The longest escaped event key kept as it is; a longer one is replaced by
#: "%H" and the hex SHA-256 of the event key.
MAX_EVENT_KEY = 128
#: The longest prefix.
MAX_PREFIX = 128

EventKey = Union[str, bytes]

_ESCAPES = {ord("%"): b"%25", ord("{"): b"%7B", ord("}"): b"%7D"}


def event_key_bytes(event_key: EventKey) -> bytes:
    """An event key as bytes: a str is encoded as UTF-8. A str holding a
    lone surrogate has no UTF-8 form and is refused (LimitError on
    eventKey), as in Node: encoding it with surrogateescape would give
    '\\udcc3\\udca9' the state key of 'é'. Pass bytes for bytes that are not
    text."""
    if isinstance(event_key, bytes):
        return event_key
    if isinstance(event_key, str):
        try:
            return event_key.encode("utf-8")
        except UnicodeEncodeError as e:
            raise LimitError(
                -1,
                "eventKey",
                f"has a lone surrogate U+{ord(event_key[e.start]):04X} at index {e.start}, "
                "which has no UTF-8 form: pass bytes for bytes that are not text",
            ) from None
    raise TypeError(f"ratelua: an event key is str or bytes, got {type(event_key).__name__}")


def escape_tag(event_key: EventKey) -> bytes:
    """Make an event key safe inside a {hash tag}: '%', '{' and '}' are
    percent-encoded; an empty key is "%"; an escaped form longer than 128
    bytes is "%H" and the hex SHA-256 of the event key."""
    raw = event_key_bytes(event_key)
    if not raw:
        return b"%"
    escaped = b"".join(_ESCAPES.get(c, bytes((c,))) for c in raw) if any(c in _ESCAPES for c in raw) else raw
    if len(escaped) > MAX_EVENT_KEY:
        return b"%H" + hashlib.sha256(raw).hexdigest().encode()
    return escaped


def check_prefix(prefix: str) -> None:
    """Refuse a prefix that would make state keys ambiguous."""
    if not isinstance(prefix, str) or prefix == "":
        raise LimitError(-1, "Prefix", "is empty")
    if len(prefix.encode()) > MAX_PREFIX:
        raise LimitError(-1, "Prefix", f"must be at most {MAX_PREFIX} bytes, got {len(prefix.encode())}")
    if "{" in prefix or "}" in prefix:
        raise LimitError(-1, "Prefix", f"may not contain '{{' or '}}', got {prefix!r}")


def limits_hash(name: str, state_version: int, unit: str, args: List[str]) -> str:
    """8 hex digits of the SHA-1 of the script's state version, the unit and
    the limit arguments: limiters with other limits use other keys."""
    text = f"{name}@v{state_version} {unit} {' '.join(args)}"
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def state_key(prefix: str, event_key: EventKey, name: str, state_version: int, hash_: str) -> bytes:
    """The state key of event_key."""
    return prefix.encode() + b":{" + escape_tag(event_key) + b"}:" + f"{name}:v{state_version}:{hash_}".encode()
