"""What a session did, counted: tool calls (how many, how long, how often they failed), compactions
and skill activations. Shown by /cost and included in the JSON result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class ToolStats:
    calls: int = 0
    errors: int = 0
    seconds: float = 0.0


@dataclass(slots=True)
class SessionMetrics:
    tools: dict[str, ToolStats] = field(default_factory=dict)
    compactions: int = 0
    skill_activations: int = 0

    def tool_call(self, name: str, seconds: float, is_error: bool) -> None:
        stats = self.tools.setdefault(name, ToolStats())
        stats.calls += 1
        stats.errors += is_error
        stats.seconds += seconds

    def to_dict(self) -> dict[str, Any]:
        return {
            "tools": {
                name: {
                    "calls": s.calls,
                    "errors": s.errors,
                    "error_rate": round(s.errors / s.calls, 3) if s.calls else 0.0,
                    "avg_duration_ms": round(s.seconds / s.calls * 1000) if s.calls else 0,
                }
                for name, s in self.tools.items()
            },
            "compactions": self.compactions,
            "skill_activations": self.skill_activations,
        }
