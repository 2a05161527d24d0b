"""What a session did, counted: tool calls (how many, how long, how often they failed), compactions
and skill activations. Shown by /cost and included in the JSON result."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from piton.core.records import record


@record
class ToolStats:
    calls: int = 0
    errors: int = 0  # calls that ran and failed
    denied: int = 0  # calls a rule or the user refused: neither run nor failed
    seconds: float = 0.0  # running, not waiting for the user's answer


@record
class SessionMetrics:
    tools: dict[str, ToolStats] = field(default_factory=dict)
    compactions: int = 0
    skill_activations: int = 0

    def tool_call(self, name: str, seconds: float, is_error: bool, *, denied: bool = False) -> None:
        stats = self.tools.setdefault(name, ToolStats())
        stats.calls += 1
        stats.denied += denied
        stats.errors += is_error and not denied
        stats.seconds += seconds

    def to_dict(self) -> dict[str, Any]:
        return {
            "tools": {
                name: {
                    "calls": s.calls,
                    "errors": s.errors,
                    "denied": s.denied,
                    "error_rate": round(s.errors / ran, 3) if (ran := s.calls - s.denied) else 0.0,
                    "avg_duration_ms": round(s.seconds / ran * 1000) if ran else 0,
                }
                for name, s in self.tools.items()
            },
            "compactions": self.compactions,
            "skill_activations": self.skill_activations,
        }
