"""Reserve, then settle: a cost known only after the work (LLM tokens,
response bytes, compute time). What the sync and asyncio limiters share:
the check that a script takes the modes, the reservation id, the ARGV of a
reserve and a settle, and the decoding of a settle's reply.

The wire contract is lua/README.md's "Reserve, then settle": a reserve is
decided as allow_n(estimate) and holds the reservation's id until its
lifetime passes; a settle refunds estimate - actual (or charges the
overrun, never denied) for every limit of the key at once; a settle the
script applies nothing for (its id unknown, expired, already settled, or
reset) answers limit_index 0 and retry_after -1, so a settle retried with
the same id applies at most once.
"""

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Optional

from .errors import LimitError, RateluaError
from .limits import MAX_SCRIPT_INT, micros
from .result import Result

#: How long a reservation can be settled when reserve is given no
#: lifetime: longer than most requests and their retries.
DEFAULT_LIFETIME = timedelta(minutes=5)

_UNIT_US = {"s": 1_000_000, "ms": 1_000, "us": 1}
_MODE_FORM = "'reserve:<id>:<lifetime>'"


class NotSupportedError(RateluaError):
    """The limiter's script (or script version) does not take the reserve
    and settle modes; raised before any round trip."""

    def __init__(self, script: str, operation: str):
        self.script, self.operation = script, operation
        super().__init__(f"ratelua: {script} does not support {operation}: its script refuses the reserve and settle "
                         "modes (token_bucket v7 takes them)")


def reserves(script) -> bool:
    """Whether script (a scripts.Script) takes the reserve and settle modes:
    its contract in the manifest documents the mode 'reserve:<id>:<lifetime>'
    for ARGV[4], as token_bucket v7's does (the others' v7 get it when their
    scripts take the modes)."""
    return any(line.startswith("ARGV[4]") and _MODE_FORM in line for line in script.argv)


def new_id() -> int:
    """A random reservation id in [1, 2^52] (secrets: unguessable, and two
    open reservations of one key share an id once in 2^52 draws)."""
    return secrets.randbelow(MAX_SCRIPT_INT) + 1


def check_id(rid) -> int:
    if not isinstance(rid, int) or isinstance(rid, bool) or not 1 <= rid <= MAX_SCRIPT_INT:
        raise LimitError(-1, "id", f"a reservation id must be an int in [1, 2^52], got {rid!r}")
    return rid


def check_estimate(n) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_SCRIPT_INT:
        raise LimitError(-1, "estimate", f"must be an int in [1, 2^52], got {n!r}")
    return n


def check_actual(n) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_SCRIPT_INT:
        raise LimitError(-1, "actual", f"must be an int in [0, 2^52], got {n!r}")
    return n


def lifetime_in(unit: str, lifetime) -> int:
    """lifetime (a timedelta or seconds; None: DEFAULT_LIFETIME) in whole
    units, rounded up: a reservation is never shorter than asked."""
    us = micros(DEFAULT_LIFETIME if lifetime is None else lifetime, "lifetime")
    if us <= 0:
        raise LimitError(-1, "lifetime", f"must be positive, got {lifetime!r}")
    n = -(-us // _UNIT_US[unit])
    if n > MAX_SCRIPT_INT:
        raise LimitError(-1, "lifetime", f"must be at most 2^52 {unit}, got {lifetime!r}")
    return n


@dataclass(frozen=True)
class Settlement:
    """The answer to a settle or a cancel.

    applied is False when the script applied nothing: the reservation's id
    was unknown to the key (its lifetime passed, it was settled already —
    e.g. by an earlier attempt whose answer was lost — or the key was
    reset). result is then a peek's remaining and reset_after with allowed
    False, retry_after NEVER and limit -1, as the script answers. Applied,
    result is the peek right after the settle: allowed when one more event
    would pass (in debt after an overrun: not before the debt is paid off,
    retry_after), remaining, and the limit that decided."""

    applied: bool
    result: Result


def settlement_of(result: Result) -> Settlement:
    """A settle's decoded reply as a Settlement: limit_index 0 (limit -1)
    is the script's "applied nothing", never the answer of a settle
    applied."""
    return Settlement(result.limit >= 0, result)


class ReservationState:
    """A reservation: what the sync and asyncio ones share. Built by a
    limiter's reserve (or reservation, for an id reserved elsewhere)."""

    def __init__(self, limiter, event_key, rid: int, estimate: int, result: Optional[Result]):
        self._limiter = limiter
        #: The event key it was reserved for.
        self.event_key = event_key
        #: The reservation's id, sent with the reserve and every settle: a
        #: process that knows it (and the event key) can settle it.
        self.id = rid
        #: The estimate reserved (0 when unknown: a reservation made elsewhere).
        self.estimate = estimate
        #: The reserve's decision, as allow_n(estimate) would give it (None
        #: for a reservation made elsewhere). Under fail_open, a reserve
        #: without an answer is admitted with the error in result.error; it
        #: may have been recorded (a timeout), so its settle is sent all the
        #: same (the script applies nothing for an id it never held).
        self.result = result
        #: The answer of the settle that got one (None before).
        self.settlement: Optional[Settlement] = None
        self._sent: Optional[int] = None  # the actual cost of a settle sent

    @property
    def allowed(self) -> bool:
        """The reserve was admitted: the estimate is taken and held."""
        return self.result is None or self.result.allowed

    @property
    def settled(self) -> bool:
        """A settle (or cancel) got an answer: later ones send nothing."""
        return self.settlement is not None

    def _before_settle(self, actual) -> bool:
        """Whether a settle with actual must be sent: not for a denied
        reservation, nor after an answer. A settle sent without an
        answer is retried with the same id, and only with the same actual
        (the first may have applied)."""
        check_actual(actual)
        if not self.allowed or self.settlement is not None:
            return False
        if self._sent is not None and self._sent != actual:
            raise LimitError(-1, "actual", f"reservation {self.id} was settled with {self._sent} without an answer "
                             f"(it may have applied): retry with {self._sent}, got {actual}")
        self._sent = actual
        return True

    def _args(self, actual: int):
        return self._limiter.reservation_args(actual, f"settle:{self.id}")

    def _after_settle(self, reply) -> Settlement:
        self.settlement = settlement_of(self._limiter.decode(reply))
        return self.settlement

    def __repr__(self) -> str:
        state = "settled" if self.settlement else "held" if self.allowed else "denied"
        return f"<Reservation {self.id} of {self.estimate} {state}>"
