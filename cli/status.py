"""The status line under the prompt: model, permission mode, sandbox, context used, cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from piton.cli.turns import SessionTotals
    from piton.runtime import Runtime


def status_line(runtime: Runtime, totals: SessionTotals, queued: int = 0) -> str:
    agent = runtime.agent
    model = agent.config.model
    mode = agent.gate.permissions.mode if agent.gate is not None else "default"
    sandbox = agent.context.policy.mode if agent.context.policy is not None else "workspace-write"
    parts = [model, f"{mode} (shift+tab)", f"sandbox {sandbox}"]
    if agent.history:
        parts.append(f"context {agent.context_used() / agent.context_window():.0%}")
    parts.append(f"${totals.cost_usd:.2f}")
    if queued:
        parts.append(f"{queued} queued")
    return " " + " · ".join(parts)
