"""Claude Code's `task_*` system lines: a subagent's life as clients follow it (`task_started` when
it starts, `task_updated` and `task_notification` when it ends)."""

from __future__ import annotations

import time
import uuid
from dataclasses import field
from typing import Any

from piton.core.conversation.events import Result, SessionStarted, SubagentEvent, ToolStarted
from piton.core.conversation.messages import Message, ToolUseBlock
from piton.core.records import record

_TASK_TOOLS = ("Task", "Agent")
Line = tuple[str, dict[str, Any]]  # a system line's subtype and its fields


@record
class _Running:
    tool_use_id: str
    started: float = field(default_factory=time.monotonic)
    tool_uses: int = 0


@record
class TaskEvents:
    """Remembers the Task calls of the main agent's replies, then says how each one's subagent
    starts and ends."""

    _inputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # Task calls by tool use id
    _running: dict[str, _Running] = field(default_factory=dict)  # subagents by agent id
    _ended: dict[str, int] = field(default_factory=lambda: {"completed": 0, "failed": 0})
    _by_type: dict[str, int] = field(default_factory=dict)
    _background: int = 0

    def calls(self, message: Message) -> None:
        for block in message.content:
            if isinstance(block, ToolUseBlock) and block.name in _TASK_TOOLS:
                self._inputs[block.id] = block.input

    def seen(self, event: SubagentEvent) -> list[Line]:
        inner, agent_id = event.event, event.agent_id
        if isinstance(inner, SessionStarted) and agent_id not in self._running:
            self._running[agent_id] = _Running(event.parent_tool_use_id)
            self._by_type[event.agent_type] = self._by_type.get(event.agent_type, 0) + 1
            given = self._inputs.get(event.parent_tool_use_id, {})
            self._background += bool(given.get("run_in_background"))
            return [("task_started", self._started(event, given))]
        running = self._running.get(agent_id)
        if running is None:
            return []
        if isinstance(inner, ToolStarted):
            running.tool_uses += 1
        if not isinstance(inner, Result):
            return []
        del self._running[agent_id]
        status = "failed" if inner.is_error else "completed"
        self._ended[status] += 1
        patch = {"status": status, "end_time": int(time.time() * 1000)}
        usage = {
            "total_tokens": inner.usage.input_tokens + inner.usage.output_tokens,
            "tool_uses": running.tool_uses,
            "duration_ms": int((time.monotonic() - running.started) * 1000),
        }
        ended = {
            "tool_use_id": running.tool_use_id,
            "status": status,
            "output_file": event.transcript,  # the subagent's session log
            "summary": inner.result,
            "usage": usage,
        }
        return [
            ("task_updated", {"task_id": agent_id, "run_id": agent_id, "patch": patch, **_new()}),
            ("task_notification", {"task_id": agent_id, "run_id": agent_id, **ended, **_new()}),
        ]

    def stats(self) -> dict[str, Any]:
        """Claude Code's `subagent_stats`: the subagents Piton started, one level deep (a subagent
        starts none)."""
        spawned = sum(self._by_type.values())
        background = self._background
        return {
            "spawned": spawned,
            "requested": {"background": background, "foreground": spawned - background, "unset": 0},
            "started_in_background": background,
            "max_depth": 1 if spawned else 0,
            "spawned_by_subagents": 0,
            **self._ended,
            "killed": {"parent": 0, "user": 0, "system": 0},
            "refused": {"depth_limit": 0, "concurrency_limit": 0, "budget": 0},
            "by_type": dict(self._by_type),
        }

    @staticmethod
    def _started(event: SubagentEvent, given: dict[str, Any]) -> dict[str, Any]:
        return {
            "task_id": event.agent_id,
            "run_id": event.agent_id,
            "tool_use_id": event.parent_tool_use_id,
            "description": given.get("description", ""),
            "subagent_type": event.agent_type,
            "is_backgrounded": bool(given.get("run_in_background")),
            "spawn_depth": 1,
            "task_type": "local_agent",
            "prompt": given.get("prompt", ""),
            **_new(),
        }


def _new() -> dict[str, str]:
    return {"uuid": str(uuid.uuid4())}
