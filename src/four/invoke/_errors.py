"""Exceptions and HTTP statuses to typed model errors, by type and status, never by text."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from functools import cache
from typing import TypeAlias

from four._types import ModelError, ModelErrorKind
from four.invoke._lazy import litellm_module

K = ModelErrorKind
_Table: TypeAlias = tuple[tuple[type[BaseException], ModelErrorKind], ...]


def kind_of_status(status: int | None) -> ModelErrorKind | None:
    """The kind an HTTP status means, or None for a status that is no error.

    >>> kind_of_status(429), kind_of_status(503), kind_of_status(401)
    (<ModelErrorKind.RATE_LIMIT: 'rate_limit'>, <ModelErrorKind.OVERLOADED: 'overloaded'>, <ModelErrorKind.AUTHENTICATION: 'authentication'>)
    """
    if status is None or status < 400:
        return None
    return _STATUSES.get(status) or (K.SERVER if status >= 500 else K.BAD_REQUEST)


_STATUSES = {
    401: K.AUTHENTICATION,
    403: K.PERMISSION,
    404: K.NOT_FOUND,
    408: K.TIMEOUT,
    409: K.SERVER,  # "conflict": providers use it for a lock held elsewhere; transient
    413: K.CONTEXT_WINDOW,
    429: K.RATE_LIMIT,
    503: K.OVERLOADED,
    529: K.OVERLOADED,
}


@cache
def _transport_table() -> _Table:
    """httpx's and the stdlib's network errors (httpx is imported by then if it was used)."""
    import httpx

    return (
        (httpx.TimeoutException, K.TIMEOUT),
        (httpx.TransportError, K.CONNECTION),
        (TimeoutError, K.TIMEOUT),
        (ConnectionError, K.CONNECTION),
    )


def kind_of_transport(exc: BaseException) -> ModelErrorKind | None:
    """TIMEOUT or CONNECTION if ``exc`` or anything in its cause chain is a network error."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if kind := _kind_in(_transport_table(), current):
            return kind
        current = current.__cause__ or current.__context__
    return None


@cache
def _litellm_table() -> _Table:
    """litellm's exception types whose status does not say their kind."""
    e = litellm_module().exceptions
    return (
        (e.ContextWindowExceededError, K.CONTEXT_WINDOW),  # a 400 litellm recognised
        (e.BudgetExceededError, K.BUDGET),
        (e.Timeout, K.TIMEOUT),
        (e.APIConnectionError, K.CONNECTION),  # a 500
        (e.APIResponseValidationError, K.SERVER),  # a 200 that is no reply
    )


def _kind_in(table: _Table, exc: BaseException) -> ModelErrorKind | None:
    return next((kind for cls, kind in table if isinstance(exc, cls)), None)


def classify_litellm(exc: Exception, now: Callable[[], float] = time.time) -> ModelError:
    """A litellm exception as a typed error: its kind, status and Retry-After.

    The kind comes from the few exception types that say it, else from the status (litellm
    raises a 403 or 529 as a generic ``APIError``, and releases before 1.110 a 401 as
    ``BadRequestError``); a failure without a status or a 5xx one (a refused connection
    is an ``InternalServerError``) is a network error if its cause chain holds one.
    """
    status = getattr(exc, "status_code", None)
    if isinstance(status, bool) or not isinstance(status, int):
        status = None
    kind = _kind_in(_litellm_table(), exc) or kind_of_status(status)
    if kind is None or kind is K.SERVER:
        kind = kind_of_transport(exc) or kind or K.OTHER
    return ModelError(
        kind, f"{type(exc).__name__}: {exc}", status, retry_after(headers_of(exc), now)
    )


def headers_of(exc: BaseException) -> Mapping[str, str]:
    """The HTTP response headers an exception carries, lower-cased ({} if none)."""
    try:  # exception attributes are the provider SDK's: read defensively
        for source in (exc, getattr(exc, "response", None)):
            for name in ("litellm_response_headers", "headers"):
                headers = getattr(source, name, None)
                if headers is not None and hasattr(headers, "items"):
                    return {str(k).lower(): str(v) for k, v in headers.items()}
    except Exception:
        pass
    return {}


def retry_after(headers: Mapping[str, str], now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date).

    >>> retry_after({"retry-after": "7"})
    7.0
    >>> retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=lambda: 1445412470.0)
    10.0
    >>> retry_after({}) is None
    True
    """
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    import email.utils  # 20 ms of imports, only for the rare HTTP-date form

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


def _number(value: str | None) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):  # None, or not a number
        return None
    return number if 0 <= number < math.inf else None
