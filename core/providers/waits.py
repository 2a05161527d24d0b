"""How long Piton waits on the API, and how often it asks again: limits read from the environment.

Every wait has a bound, and every bound has a variable (milliseconds, as Claude Code's
`API_TIMEOUT_MS`). A value that is not a number is told in one line and the default kept: a typo in a
shell profile should not stop every run, nor pass unnoticed.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from piton.core.records import record

CONNECT_VAR = "PITON_CONNECT_TIMEOUT_MS"
RESPONSE_VAR = "API_TIMEOUT_MS"  # Claude Code's name: its users already set it
IDLE_VAR = "PITON_STREAM_IDLE_TIMEOUT_MS"
RETRY_WAIT_VAR = "PITON_MAX_RETRY_WAIT_MS"
RETRIES_VAR = "PITON_MAX_RETRIES"
REPLY_VAR = "PITON_REPLY_TIMEOUT_MS"


@record(frozen=True)
class Waits:
    connect_s: float = 5.0  # a TCP and TLS handshake; a refused or black-holed host fails within it
    response_s: float = 60.0  # from sending a request to the response's headers
    idle_s: float = 60.0  # the longest silence inside a stream; the API's pings count as activity
    # a whole reply, from sending the request to its last event: pings keep a stream alive but never
    # finish it, and the longest legitimate reply (128k output tokens) takes about 20 minutes
    reply_s: float = 1800.0
    max_retry_wait_s: float = 60.0  # the longest pause before asking again, `retry-after` included
    max_retries: int = 4  # asking again after a failure; 5 attempts in all
    backoff_s: float = 1.0  # the first pause without a `retry-after`; it doubles each time

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based): doubling, up to 25% jitter (so that
        many clients failed at once do not return at once), never beyond the cap."""
        return min(self.backoff_s * 2.0 ** (attempt - 1) * (1 + random.random() / 4), self.max_retry_wait_s)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> tuple[Waits, list[str]]:
        """The limits the environment sets, and one line for each variable that could not be read."""
        waits = cls()
        changes: dict[str, Any] = {}
        problems: list[str] = []
        fields = (
            (CONNECT_VAR, "connect_s", False),
            (RESPONSE_VAR, "response_s", False),
            (IDLE_VAR, "idle_s", False),
            (REPLY_VAR, "reply_s", False),
            (RETRY_WAIT_VAR, "max_retry_wait_s", True),
        )
        for var, name, zero_ok in fields:
            raw = environ.get(var, "").strip()
            if not raw:
                continue
            ms = _milliseconds(raw, zero_ok)
            default_ms = round(getattr(waits, name) * 1000)
            if ms is None:
                least = "0 or more" if zero_ok else "more than 0"
                problems.append(
                    f"{var}={raw!r} is not a number of milliseconds ({least}); using {default_ms}"
                )
            else:
                changes[name] = ms / 1000
        raw = environ.get(RETRIES_VAR, "").strip()
        if raw:
            if raw.isascii() and raw.isdigit():
                changes["max_retries"] = int(raw)
            else:
                problems.append(
                    f"{RETRIES_VAR}={raw!r} is not a whole number (0 or more); using {waits.max_retries}"
                )
        return replace(waits, **changes), problems


def _milliseconds(raw: str, zero_ok: bool) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        return None
    return value


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, else `retry-after` in seconds or as a date."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / scale
        except ValueError:
            date = email.utils.parsedate_tz(raw) if scale == 1.0 else None
            if date is None:
                continue
            value = email.utils.mktime_tz(date) - time.time()
        if math.isfinite(value):
            return max(value, 0.0)
    return None


def say_seconds(seconds: float) -> str:
    """A duration as people read it: `0.3 s`, `1.2 s`, `45 s`, `60 min`."""
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    if seconds >= 9.95 or seconds == int(seconds):
        return f"{seconds:.0f} s"
    if seconds >= 1:
        return f"{seconds:.1f} s"
    return f"{seconds:.2g} s"
