"""The Notification hook of a terminal session: Piton waits for the user (the session's own start
and end hooks are `piton.session.Session`'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from piton.runtime import Runtime


async def notify(runtime: Runtime, message: str, kind: str) -> None:
    """`permission_prompt`: Piton waits for an answer (the hook may ring a bell, send a message)."""
    hooks = runtime.agent.hooks
    if hooks is not None and hooks.has("Notification"):
        await hooks.notification(message, kind)
