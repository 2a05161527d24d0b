"""The hook callbacks a client registers at `initialize` (the Claude Agent SDK's `hooks`) for the
session's events other than a tool call's: UserPromptSubmit, Stop, SubagentStart, SubagentStop,
PreCompact, Notification, SessionStart and SessionEnd. Each is asked with a `hook_callback` request and its
answer read as a settings hook's JSON output, so both kinds of hook act the same way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from piton.client_gate import Ask, matches
from piton.core.hooks.config import DEFAULT_TIMEOUT_S, HookCommand
from piton.core.hooks.run import HookRun
from piton.core.records import record

# the events served here; PreToolUse and PostToolUse have their own (`piton.client_gate`)
SESSION_EVENTS = (
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "Notification",
    "SessionStart",
    "SessionEnd",
)
_CLIENT = Path("<client>")  # where a callback comes from, as a hook's source


@record
class ClientCallbacks:
    """`Hooks.callbacks`: the client's matchers by event (`{"matcher", "hookCallbackIds"}`)."""

    by_event: dict[str, list[dict[str, Any]]]
    ask: Ask
    tell: Callable[[dict[str, Any]], None]  # sends without waiting: SessionEnd's, at the close

    def has(self, event: str) -> bool:
        return bool(self.by_event.get(event))

    async def run(self, event: str, match: str | None, payload: dict[str, Any]) -> list[HookRun]:
        """Each callback of `event` whose matcher takes `match`, asked in turn."""
        runs = []
        for matcher in self.by_event.get(event, []):
            if match is not None and not matches(matcher.get("matcher"), match):
                continue
            for callback_id in matcher.get("hookCallbackIds") or []:
                runs.append(await self._one(event, matcher, str(callback_id), payload))
        return runs

    async def _one(
        self, event: str, matcher: dict[str, Any], callback_id: str, payload: dict[str, Any]
    ) -> HookRun:
        timeout = matcher.get("timeout")
        hook = HookCommand(
            event,
            str(matcher.get("matcher") or ""),
            f"client callback {callback_id}",
            float(timeout) if isinstance(timeout, int | float) else DEFAULT_TIMEOUT_S,
            _CLIENT,
            trusted=True,
            sandboxed=False,
        )
        request = {"subtype": "hook_callback", "callback_id": callback_id, "input": payload}
        if event == "SessionEnd":  # its answer changes nothing, and the client may be gone
            self.tell(request)
            return HookRun(hook, 0, "", "")
        try:
            output = await asyncio.wait_for(self.ask(request), hook.timeout)
        except TimeoutError:
            return HookRun(hook, None, "", "", problem=f"timed out after {hook.timeout:g} s")
        except Exception as e:  # said to the user as a failed hook's line; the run goes on
            return HookRun(hook, None, "", "", problem=f"failed: {e or type(e).__name__}")
        return HookRun(hook, 0, json.dumps(output), "")
