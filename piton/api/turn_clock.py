"""The timings Claude Code's lines carry: how long a reply thought (`thinking_duration_ms` on its
thinking line), how long a turn waited for its first token (`ttft_ms` on the result), and which
result of the session a result is (`result_index`)."""

from __future__ import annotations

import time
from dataclasses import field
from typing import Any

from piton.core.records import record


def _ms(since: float) -> int:
    return int((time.monotonic() - since) * 1000)


@record
class TurnClock:
    _turn: float = field(default_factory=time.monotonic)
    _first_token: int | None = None  # ms after the turn began
    _thinking_since: float | None = None
    _thought_ms: int | None = None
    _results: int = 0

    def turn(self) -> None:
        self._turn, self._first_token = time.monotonic(), None
        self.retried()

    def retried(self) -> None:
        """A reply cut off (or a turn interrupted): what it thought is not the next reply's."""
        self._thinking_since, self._thought_ms = None, None

    def streamed(self, thinking: bool) -> None:
        """A delta of the reply came: the first token, and where thinking starts and ends."""
        if self._first_token is None:
            self._first_token = _ms(self._turn)
        if thinking and self._thinking_since is None:
            self._thinking_since = time.monotonic()
        elif not thinking and self._thinking_since is not None and self._thought_ms is None:
            self._thought_ms = _ms(self._thinking_since)

    def reply_done(self) -> int | None:
        """How long this reply thought, if it did; the next reply starts afresh."""
        if self._thinking_since is not None and self._thought_ms is None:
            self._thought_ms = _ms(self._thinking_since)
        thought = self._thought_ms
        self.retried()
        return thought

    def result_fields(self, model_usage: dict[str, Any]) -> dict[str, Any]:
        index, self._results = self._results, self._results + 1
        fields: dict[str, Any] = {"result_index": index, "fast_mode_state": "off", "safety_stops": 0}
        if self._first_token is not None:
            fields |= {"ttft_ms": self._first_token, "ttft_stream_ms": self._first_token}
        # a result reports its own turn's usage, so since the last result is the same figure
        return fields | {"model_usage_since_last_result": model_usage}
