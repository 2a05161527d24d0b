"""The hooks of a terminal session's own events: SessionStart when a session opens (its output is
context for the first turn), SessionEnd when it closes, Notification when Piton waits for the user."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from piton.core.conversation.events import AgentEvent
    from piton.runtime import Runtime

Show = Callable[["AgentEvent"], None]


async def session_start(runtime: Runtime, source: str, show: Show) -> None:
    """`startup`, `resume` or `clear`."""
    hooks = runtime.agent.hooks
    if hooks is None or not hooks.has("SessionStart"):
        return
    for text in await hooks.session_start(source):
        runtime.agent.add_note(text)
    for event in hooks.drain():
        show(event)


async def session_end(runtime: Runtime, reason: str, show: Show) -> None:
    """`clear`, `prompt_input_exit` or `other`; what the hooks say cannot keep the session open."""
    hooks = runtime.agent.hooks
    if hooks is None or not hooks.has("SessionEnd"):
        return
    await hooks.session_end(reason)
    for event in hooks.drain():
        show(event)


async def notify(runtime: Runtime, message: str, kind: str) -> None:
    """`permission_prompt`: Piton waits for an answer (the hook may ring a bell, send a message)."""
    hooks = runtime.agent.hooks
    if hooks is not None and hooks.has("Notification"):
        await hooks.notification(message, kind)
