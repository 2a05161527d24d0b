"""Small tools for loop tests and benchmarks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic import BaseModel

from piton.core.agent import Agent
from piton.core.agent_parts import AgentConfig
from piton.core.providers import Provider
from piton.core.tools import AnyTool, Tool, ToolContext, ToolRegistry, ToolResult


class TextInput(BaseModel):
    text: str


class NoOp(Tool[TextInput]):
    name = "NoOp"
    description = "Does nothing."
    input_model = TextInput
    read_only = True

    async def run(self, args: TextInput, ctx: ToolContext) -> ToolResult:
        return ToolResult("ok")


class Probe(Tool[TextInput]):
    """A tool whose behaviour a test sets: `action(text)` runs inside it; calls are logged."""

    input_model = TextInput
    description = "A scriptable test tool."

    def __init__(
        self, name: str, action: Callable[[str], Awaitable[str]] | None = None, *, read_only: bool = False
    ) -> None:
        self.name = name
        self.read_only = read_only
        self.action = action
        self.log: list[str] = []

    async def run(self, args: TextInput, ctx: ToolContext) -> ToolResult:
        self.log.append(f"start {args.text}")
        try:
            out = await self.action(args.text) if self.action else f"{self.name}: {args.text}"
        finally:
            self.log.append(f"end {args.text}")
        return ToolResult(out, summary=out)


class Boom(Tool[TextInput]):
    name = "Boom"
    description = "Always raises."
    input_model = TextInput

    async def run(self, args: TextInput, ctx: ToolContext) -> ToolResult:
        raise RuntimeError(f"boom: {args.text}")


async def forever(_: str) -> str:
    await asyncio.Event().wait()
    return "never"


def make_agent(provider: Provider, *tools: AnyTool, cwd: Path | None = None, **config: object) -> Agent:
    settings: dict[str, object] = {
        "model": "claude-sonnet-5-5",
        "system_prompt": "You are a test agent.",
        "cwd": cwd or Path.cwd(),
        "session_id": "test-session",
    }
    settings.update(config)
    return Agent(provider, ToolRegistry(tools), AgentConfig(**settings))  # type: ignore[arg-type]
