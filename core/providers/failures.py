"""What went wrong with a request to the API, in words: which failures asking again may fix, what the
retry line says about them, and the one line that ends a run when nothing more will be tried."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from piton.core.providers import ProviderError
from piton.core.providers.waits import CONNECT_VAR, IDLE_VAR, Waits, retry_after, say_seconds
from piton.core.records import record

DEFAULT_BASE_URL = "https://api.anthropic.com"
# the API's error types, then Bedrock's exceptions of the same meaning (its stream's own names)
_RETRYABLE_STREAM_ERRORS = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"} | {
    "throttlingException",
    "serviceUnavailableException",
    "internalServerException",
}
_RETRIED_STATUS = {408, 409, 429}  # and every status from 500 up, as the SDK would
_KIND_BY_STREAM_ERROR = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "throttlingException": "rate_limit",
    "serviceUnavailableException": "overloaded",
}
_KIND_BY_STATUS = {
    400: "invalid_request",
    401: "auth",
    402: "billing",
    403: "permission",
    404: "not_found",
    413: "invalid_request",
    422: "invalid_request",
    429: "rate_limit",
}
_KIND_BY_ERROR_TYPE = {
    "invalid_request_error": "invalid_request",
    "authentication_error": "auth",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "request_too_large": "invalid_request",
    "billing_error": "billing",
}
_HINTS = {
    "auth": " (check ANTHROPIC_API_KEY)",
    "not_found": " (is the model id right? see --model)",
    "billing": " (check the account's plan and credits)",
}


@record(frozen=True)
class StatusError:
    """An HTTP error response, as either transport read it: the status, the API's error type and
    message from the body (when it had them), and the headers (`retry-after`, `x-should-retry`)."""

    status: int
    error_type: str | None
    message: str
    headers: Mapping[str, str]
    reason: str = ""

    @classmethod
    def from_body(cls, status: int, text: str, headers: Mapping[str, str], reason: str = "") -> StatusError:
        """From the response's body: `{"type": "error", "error": {"type": …, "message": …}}` when the
        API sent it; whatever a proxy sent otherwise, trimmed to a line."""
        error: Any = None
        with contextlib.suppress(ValueError):
            body = json.loads(text)
            error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            error = {}
        error_type = error.get("type") if isinstance(error.get("type"), str) else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
        line = _page_title(text) or " ".join(text.split())
        return cls(status, error_type, message or line[:300] or f"HTTP {status}", headers, reason)


def describe(exc: BaseException) -> str:
    """`Type: message`, the message from the deepest cause that has one (`[Errno 111] Connect call
    failed` says more than `All connection attempts failed`), or the type alone: some errors (a read
    timeout) have no message at all."""
    text, seen = "", 0
    current: BaseException | None = exc
    while current is not None and seen < 8:
        text = " ".join(str(current).split()) or text
        current, seen = current.__cause__ or current.__context__, seen + 1
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Retry(Exception):
    """A failed attempt that asking again may fix. `reason` is what the retry line says; `final` and
    `hint` make the one line that ends the run when no attempt is left."""

    def __init__(
        self,
        reason: str,
        *,
        final: str,
        kind: str,
        status: int | None = None,
        error_type: str | None = None,
        retry_after: float | None = None,
        hint: str = "",
        attempts: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.attempts = attempts  # at most this many tries in all for this failure, when fewer make sense
        self.reason = reason
        self.final = final
        self.kind = kind
        self.status = status
        self.error_type = error_type
        self.retry_after = retry_after
        self.hint = hint

    def give_up(self, attempts: int) -> ProviderError:
        notes = [f"failed {attempts} times in a row"] if attempts > 1 else []
        notes += [self.hint] if self.hint else []
        suffix = f" ({'; '.join(notes)})" if notes else ""
        return ProviderError(f"{self.final}{suffix}", kind=self.kind, status=self.status)


def _should_retry(status: int, headers: Any) -> bool:
    said = headers.get("x-should-retry")  # the API's own word wins
    if said in ("true", "false"):
        return bool(said == "true")
    return status in _RETRIED_STATUS or status >= 500


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>|<h1[^>]*>(.*?)</h1>", re.IGNORECASE | re.DOTALL)


def _page_title(text: str) -> str | None:
    """What an HTML error page of a proxy says (its title or first heading), not its markup."""
    if "<html" not in text[:500].lower() and "<!doctype" not in text[:100].lower():
        return None
    import html  # its entity table is a millisecond of every start, for a page that rarely comes

    found = _TITLE.search(text)
    said = next((g for g in found.groups() if g), "") if found else ""
    plain = " ".join(re.sub(r"<[^>]+>", " ", html.unescape(said)).split())
    return f"{plain} (an HTML page)" if plain else "an HTML page"


def status_failure(error: StatusError, base_url: str = DEFAULT_BASE_URL) -> Exception:
    """An HTTP error response: a `Retry` when asking again may help, else the run's last word."""
    status, error_type = error.status, error.error_type
    kind = _KIND_BY_ERROR_TYPE.get(str(error_type)) or _KIND_BY_STATUS.get(status)
    final = f"API error {status}: {error.message}"
    if not _should_retry(status, error.headers):
        kind = kind or ("overloaded" if status >= 500 else "invalid_request")
        hint = _HINTS.get(kind, "")
        if kind == "not_found" and base_url.rstrip("/") != DEFAULT_BASE_URL:
            # a gateway or proxy that lacks the endpoint answers 404 as a wrong model id does
            hint = f" (from {base_url}: is ANTHROPIC_BASE_URL right, and the model id? see --model)"
        if kind == "invalid_request" and ("tool_reference" in final or "defer_loading" in final):
            # a gateway that cannot pass tool search on: the one setting that gets past it
            hint = " (a gateway without tool search: set ENABLE_TOOL_SEARCH=false)"
        return ProviderError(f"{final}{hint}", kind=kind, status=status)
    return Retry(
        f"{status} {error_type or error.reason or 'error'}",
        final=final,
        kind=kind or "overloaded",
        status=status,
        error_type=error_type,
        retry_after=retry_after(error.headers),
        hint="try again later",
    )


def stream_error(data: str) -> Exception:
    """An `error` event inside a stream whose HTTP status already said 200."""
    try:
        error = json.loads(data)["error"]
        error_type, message = str(error["type"]), str(error.get("message", ""))
    except (ValueError, TypeError, KeyError):
        error_type, message = "error", " ".join(data.split())
    final = f"API error during the reply ({error_type}): {message}"
    kind = _KIND_BY_ERROR_TYPE.get(error_type) or _KIND_BY_STREAM_ERROR.get(error_type, "stream")
    if error_type not in _RETRYABLE_STREAM_ERRORS:
        return ProviderError(final, kind=kind)
    return Retry(f"{error_type} during the reply", final=final, kind=kind, error_type=error_type)


def transport_failure(exc: Exception, idle: float) -> Retry:
    """A stream that went silent for `idle` seconds (a `TimeoutError`), or whose connection broke."""
    if isinstance(exc, TimeoutError):
        return Retry(
            f"the stream was silent for {say_seconds(idle)}",
            final=f"The API stream went silent for {say_seconds(idle)}",
            kind="timeout",
            hint=f"{IDLE_VAR} sets the wait",
        )
    what = describe(exc)
    return Retry(f"the connection broke ({what})", final=f"The API stream broke: {what}", kind="stream")


def connection_failure(exc: BaseException, base_url: str, waits: Waits) -> Retry:
    """A request that never reached a response: a limit the transport reached before our own timers
    (connecting, the usual one, or sending the request body), or a connection refused or broken."""
    import ssl

    import httpx2

    if isinstance(exc, httpx2.WriteTimeout):
        stalled = f"stalled for {say_seconds(waits.idle_s)}"
        return Retry(
            f"sending the request {stalled}",
            final=f"Sending the request to {base_url} {stalled}",
            kind="timeout",
            hint=f"{IDLE_VAR} sets the wait",
        )
    hint = ""
    if isinstance(exc, httpx2.ConnectTimeout):
        what, hint = f"no connection within {say_seconds(waits.connect_s)}", f"{CONNECT_VAR} sets the wait"
    else:
        what = describe(exc)
    # nothing listens on this machine's port: a server still starting gets one more try, not a minute
    nobody = _refused(exc) and _loopback(base_url)
    # no certificate vouches for the server: asking again cannot change that
    untrusted = _caused_by(exc, lambda e: isinstance(e, ssl.SSLCertVerificationError))
    if untrusted:
        hint = "SSL_CERT_FILE or SSL_CERT_DIR names the certificates to trust"
    return Retry(
        f"cannot connect: {what}",
        final=f"Cannot reach the API at {base_url}: {what}"
        + (" (is the local server running?)" if nobody else ""),
        kind="connection",
        hint=hint,
        attempts=2 if nobody else 1 if untrusted else None,
    )


def _caused_by(exc: BaseException, test: Callable[[BaseException], bool]) -> bool:
    current: BaseException | None = exc
    for _ in range(8):
        if current is None:
            return False
        if test(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _refused(exc: BaseException) -> bool:
    return _caused_by(exc, lambda e: isinstance(e, ConnectionRefusedError) or "Connection refused" in str(e))


def _loopback(base_url: str) -> bool:
    from urllib.parse import urlsplit

    host = urlsplit(base_url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")
