"""The tool contract, the registry tools are found in, and error-as-data invocation.

Whatever goes wrong in a tool call (unknown name, input that fails the schema, an exception inside
the tool) comes back as an `is_error` result the model can read and correct, never as a crash.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ValidationError

from piton.core.activation import Activation
from piton.core.conversation.messages import ImageBlock, TextBlock, ToolResultBlock, ToolUseBlock
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import Sandbox

NO_OUTPUT = "(no output)"


@dataclass(frozen=True, slots=True)
class ToolResult:
    content: str | list[TextBlock | ImageBlock]
    is_error: bool = False
    summary: str = ""  # one line for people, e.g. "42 lines" or "exit 1"
    display: Any = None  # extra detail for people (a diff...), never sent to the model
    activation: Activation | None = None  # a skill this call loaded: its text follows the results

    def to_block(self, tool_use_id: str) -> ToolResultBlock:
        content = self.content if self.content else NO_OUTPUT
        return ToolResultBlock(tool_use_id=tool_use_id, content=content, is_error=self.is_error)

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=message, is_error=True, summary=message.splitlines()[0] if message else "")


def _no_record(kind: str, **data: object) -> None:
    pass


@dataclass(frozen=True, slots=True)
class CallScope:
    """The tool call under way in this task: its id, and where it reports progress (a subagent's
    events) while it runs."""

    tool_use_id: str
    emit: Callable[[Any], None]


current_call: ContextVar[CallScope | None] = ContextVar("piton_current_call", default=None)


@dataclass(slots=True)
class ToolContext:
    """What a tool may know about the run it serves. `state` is per-session scratch space keyed by
    tool (files read so far, the shell's directory, the todo list...); `record` adds a line to the
    session log."""

    cwd: Path
    session_id: str
    policy: SandboxPolicy | None = None
    sandbox: Sandbox | None = None
    state: dict[str, Any] = field(default_factory=dict)
    record: Callable[..., None] = _no_record


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = False  # read-only tools of one turn run concurrently
    kind: ClassVar[str] = "other"  # read | edit | execute | other: the rule family and mode that govern it

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolResult: ...

    def rule_content(self, args: Any, ctx: ToolContext) -> str | None:
        """What permission rules match against: the command, or the absolute path it touches."""
        return None

    def preview(self, args: Any, ctx: ToolContext) -> str | None:
        """What a person deciding whether to allow the call should see (a diff), if not the input."""
        return None

    def spec(self) -> dict[str, Any]:
        schema = self.input_model.model_json_schema(by_alias=True)
        schema.pop("title", None)
        return {"name": self.name, "description": self.description, "input_schema": schema}


class Gate(Protocol):
    """Decides, before a validated call runs, whether it may: None to go ahead, or the refusal."""

    async def __call__(self, tool: Tool, args: Any, block: ToolUseBlock) -> ToolResult | None: ...


def _describe_validation(error: ValidationError) -> str:
    parts = []
    for e in error.errors():
        where = ".".join(str(p) for p in e["loc"]) or "input"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: list[dict[str, Any]] | None = None
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        self._tools[tool.name] = tool
        self._specs = None

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        if self._specs is None:
            self._specs = [t.spec() for t in self._tools.values()]
        return self._specs

    def is_read_only(self, name: str) -> bool:
        tool = self._tools.get(name)
        return tool is not None and tool.read_only

    async def call(
        self,
        block: ToolUseBlock,
        ctx: ToolContext,
        input_error: str | None = None,
        gate: Gate | None = None,
    ) -> ToolResult:
        tool = self._tools.get(block.name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return ToolResult.error(f"Unknown tool '{block.name}'. Available tools: {available}.")
        if input_error is not None:
            return ToolResult.error(
                f"The input for {block.name} was not valid JSON ({input_error}). Send it again."
            )
        try:
            args = tool.input_model.model_validate(block.input)
        except ValidationError as e:
            return ToolResult.error(f"Invalid input for {block.name}: {_describe_validation(e)}")
        if gate is not None:
            refusal = await gate(tool, args, block)
            if refusal is not None:
                return refusal
        try:
            return await tool.run(args, ctx)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # error-as-data: the model sees what broke and can try otherwise
            return ToolResult.error(f"{block.name} failed: {type(e).__name__}: {e}")
