"""The `result` line that ends a run or a turn, key for key as Claude Code writes it where Piton
has the value."""

from __future__ import annotations

import uuid
from typing import Any

from piton.core.conversation.events import Result


def result_to_dict(result: Result) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "result",
        "subtype": result.subtype,
        "is_error": result.is_error,
        "duration_ms": result.duration_ms,
        "duration_api_ms": result.duration_api_ms,
        "num_turns": result.num_turns,
        "result": result.result,
        "session_id": result.session_id,
        "total_cost_usd": result.total_cost_usd,
        "usage": result.usage.to_dict(),
        "modelUsage": result.model_usage,
        "permission_denials": list(result.permission_denials),
        "stop_reason": result.stop_reason,
        "terminal_reason": result.terminal_reason,
        "api_error_status": result.api_error_status,
        "uuid": str(uuid.uuid4()),
    }
    if result.structured_output is not None:
        out["structured_output"] = result.structured_output
    if result.errors or result.is_error:  # Claude Code's error results always say what went wrong
        out["errors"] = list(result.errors) or [result.result]
    out["metrics"] = result.metrics
    return out
