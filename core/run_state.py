"""What one run of the agent has counted so far, how a run ends (`Stop`), and the result it
reports."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import field
from typing import Any

from piton.core.conversation.events import Result
from piton.core.conversation.usage import UsageTotals
from piton.core.records import record


@record(slots=False)
class Stop(Exception):
    """Ends a run; carries what the result reports."""

    subtype: str
    text: str
    stop_reason: str | None = None
    errors: tuple[str, ...] = ()
    structured: Any = None  # a `--json-schema` run's answer
    api_status: int | None = None  # the API error's HTTP status, when one ended the run


@record
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
            structured_output=stop.structured,
            terminal_reason=terminal_reason(stop),
            api_error_status=stop.api_status,
        )


# how a run ended, by its result's subtype, in Claude Code's `terminal_reason` words
_TERMINAL = {
    "error_max_turns": "max_turns",
    "error_max_budget_usd": "budget_exhausted",
    "error_max_budget_tokens": "budget_exhausted",
    "error_max_structured_output_retries": "structured_output_retry_exhausted",
    "error_during_execution": "api_error",  # what a run's own Stop reports inside a turn
}


def terminal_reason(stop: Stop) -> str:
    if stop.stop_reason == "hook_stopped":
        return "hook_stopped"
    return _TERMINAL.get(stop.subtype, "completed")


_NOT_SUMMED = ("contextWindow", "maxOutputTokens", "canonicalModel")


def combined(results: list[Result], background: UsageTotals, duration_ms: int) -> Result:
    """One result for a run of several turns (the model heard its background agents' reports as
    turns of their own): the last turn's answer and outcome, the counts and costs of every turn and
    of the background agents."""
    last = results[-1]
    if len(results) == 1 and not background.by_model:
        return last
    model_usage: dict[str, dict[str, Any]] = {}
    for by_model in [*(r.model_usage for r in results), background.model_usage_dict()]:
        for model, counts in by_model.items():
            if model not in model_usage:
                model_usage[model] = dict(counts)
                continue
            into = model_usage[model]
            for key, value in counts.items():
                if key not in _NOT_SUMMED and isinstance(value, int | float):
                    into[key] = into.get(key, 0) + value
    total = background.total
    for r in results:
        total = total + r.usage
    return dataclasses.replace(
        last,
        num_turns=sum(r.num_turns for r in results),
        duration_ms=duration_ms,
        duration_api_ms=sum(r.duration_api_ms for r in results),
        usage=total,
        model_usage=model_usage,
        total_cost_usd=round(sum(r.total_cost_usd for r in results) + background.cost_usd, 6),
        permission_denials=tuple(d for r in results for d in r.permission_denials),
    )
