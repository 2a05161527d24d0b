"""The status line under the prompt: model, permission mode, sandbox, context used, cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from piton.cli.repl import Repl


def status_line(repl: Repl) -> str:
    assert repl.runtime is not None
    agent = repl.runtime.agent
    model = agent.config.model
    mode = agent.gate.permissions.mode if agent.gate is not None else "default"
    sandbox = agent.context.policy.mode if agent.context.policy is not None else "workspace-write"
    parts = [model, f"{mode} (shift+tab)", f"sandbox {sandbox}"]
    if agent.history:
        parts.append(f"context {agent.context_used() / agent.context_window():.0%}")
    parts.append(f"${repl.totals.cost_usd:.2f}")
    if repl.queue:
        parts.append(f"{len(repl.queue)} queued")
    return " " + " · ".join(parts)
