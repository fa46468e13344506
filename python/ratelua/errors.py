"""The errors of ratelua: a bad limit before any round trip, the server's
error reply, and a call that got no answer."""


class RateluaError(Exception):
    """Every error ratelua raises."""


class LimitError(RateluaError, ValueError):
    """A limit, option or argument was rejected before any round trip.

    ``index`` is the 0-based limit (-1 for an option or argument), ``field``
    the field (named as in Go: ``Max``, ``Resolution``, ``Prefix``...).
    """

    def __init__(self, index: int, field: str, reason: str):
        self.index, self.field, self.reason = index, field, reason
        if index < 0:
            message = f"ratelua: invalid {field}: {reason}"
        else:
            message = f"ratelua: invalid limit {index}: {field} {reason}"
        super().__init__(message)


class ScriptError(RateluaError):
    """The server answered with an error reply (NOPERM, OOM, BUSY, a script's
    refusal...), or a reply of the wrong shape. Never admitted, even by a
    fail-open limiter."""

    def __init__(self, script: str, message: str):
        self.script, self.message = script, message
        super().__init__(f"ratelua: {script}: {message}")


class UnavailableError(RateluaError):
    """The call could not be sent or got no answer (connection refused or
    reset, timeout). A fail-open limiter admits the call and returns this
    error in ``Result.error``; a fail-closed one raises it."""

    def __init__(self, script: str, cause: BaseException):
        self.script = script
        super().__init__(f"ratelua: server unavailable: {script}: {cause}")
        self.__cause__ = cause


class LeaseLostError(RateluaError):
    """A concurrency lease is no longer held: it was not renewed before its
    deadline, the server no longer holds it (expired, reset, or forgotten
    by a failover), or it was released. Its slots may be another holder's
    now: the work it guarded should stop."""

    def __init__(self, lease_id: int, reason: str):
        self.lease_id, self.reason = lease_id, reason
        super().__init__(f"ratelua: lease lost: lease {lease_id}: {reason}")
