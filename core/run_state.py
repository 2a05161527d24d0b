"""What one run of the agent has counted so far, how a run ends (`Stop`), and the result it
reports."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from piton.core.conversation.events import Result
from piton.core.conversation.usage import UsageTotals


@dataclass
class Stop(Exception):
    """Ends a run; carries what the result reports."""

    subtype: str
    text: str
    stop_reason: str | None = None
    errors: tuple[str, ...] = ()


@dataclass(slots=True)
class RunStats:
    started: float = field(default_factory=time.monotonic)
    api_seconds: float = 0.0
    turns: int = 0
    usage: UsageTotals = field(default_factory=UsageTotals)
    denials_before: int = 0  # the gate keeps the session's denials; a run reports its own

    def result(
        self, stop: Stop, session_id: str, denials: tuple[dict[str, Any], ...], metrics: dict[str, Any]
    ) -> Result:
        return Result(
            subtype=stop.subtype,
            is_error=stop.subtype != "success",
            result=stop.text,
            session_id=session_id,
            num_turns=self.turns,
            duration_ms=int((time.monotonic() - self.started) * 1000),
            duration_api_ms=int(self.api_seconds * 1000),
            usage=self.usage.total,
            model_usage=self.usage.model_usage_dict(),
            total_cost_usd=round(self.usage.cost_usd, 6),
            stop_reason=stop.stop_reason,
            errors=stop.errors,
            permission_denials=denials,
            metrics=metrics,
        )
