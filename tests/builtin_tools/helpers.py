"""Calling a tool the way the agent does, with a context for a workspace in tmp_path."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from piton.core.conversation.messages import ToolUseBlock
from piton.core.safety.policy import SandboxPolicy
from piton.core.tools import AnyTool, ToolContext, ToolRegistry, ToolResult


def context(workspace: Path, mode: str = "workspace-write", **policy: Any) -> ToolContext:
    records: list[tuple[str, dict[str, Any]]] = []

    def record(kind: str, **data: Any) -> None:
        records.append((kind, data))

    ctx = ToolContext(
        cwd=workspace,
        session_id="test",
        policy=SandboxPolicy.create(mode, workspace, **policy),  # type: ignore[arg-type]
        record=record,
    )
    ctx.state["records"] = records
    return ctx


async def call_async(tool: AnyTool, ctx: ToolContext, **tool_input: Any) -> ToolResult:
    """Validate `tool_input` against the tool's schema and run it, as the registry does."""
    block = ToolUseBlock(id="toolu_test", name=tool.name, input=tool_input)
    return await ToolRegistry([tool]).call(block, ctx)


_loops = threading.local()  # each thread's runner, made at its first call


def call(tool: AnyTool, ctx: ToolContext, **tool_input: Any) -> ToolResult:
    """`call_async` to its end on this thread's loop, kept from call to call (making a loop and its
    thread pool again for each is most of a small tool call's cost); whatever the call left running
    is cancelled before the next one starts, as a loop's close would."""
    runner: asyncio.Runner | None = getattr(_loops, "runner", None)
    if runner is None:
        runner = _loops.runner = asyncio.Runner()
    try:
        return runner.run(call_async(tool, ctx, **tool_input))
    finally:
        runner.run(_cancel_the_rest())


async def _cancel_the_rest() -> None:
    rest = asyncio.all_tasks() - {asyncio.current_task()}
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


def text(result: ToolResult) -> str:
    assert isinstance(result.content, str), result.content
    return result.content
