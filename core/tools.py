"""The tool contract, the registry tools are found in, and error-as-data invocation.

A tool declares its input as a pydantic model (`Tool[BashInput]`), says what permission rules match
(`rule_content`), whether a given call only looks (`is_read_only`) or may run beside others
(`is_concurrency_safe`), and what people should see of
its result (a typed `Display`). Whatever goes wrong in a call (unknown name, input that fails the
schema, an exception inside the tool) comes back as an `is_error` result the model can read and
correct, never as a crash.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import field
from functools import cache
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from piton.core.checkpoints import Checkpoints
from piton.core.conversation.messages import (
    ToolUseBlock,
)
from piton.core.conversation.results import NO_OUTPUT as NO_OUTPUT
from piton.core.conversation.results import ResultPart as ResultPart
from piton.core.conversation.results import ToolResult as ToolResult
from piton.core.records import record
from piton.core.safety.lock import CommandLock
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import Sandbox
from piton.core.schedule import Schedule
from piton.core.shells import BackgroundShells
from piton.core.team import Team

ToolKind = Literal[
    "read", "edit", "execute", "plan", "question", "other"
]  # the rules and mode that govern it
InputT = TypeVar("InputT", bound=BaseModel)


def _no_record(kind: str, **data: object) -> None:
    pass


@record(frozen=True)
class CallScope:
    """The tool call under way in this task: its id, and where it reports progress (a subagent's
    events) while it runs."""

    tool_use_id: str
    emit: Callable[[Any], None]


current_call: ContextVar[CallScope | None] = ContextVar("piton_current_call", default=None)


@record
class ToolContext:
    """What a tool may know about the run it serves. `state` is per-session scratch space, each key
    owned by one tool (files read so far, the shell's directory, the task list...); `record` adds a
    line of the tool's own kind to the session log, which the tool gets back through `restore`."""

    cwd: Path
    session_id: str
    policy: SandboxPolicy | None = None
    sandbox: Sandbox | None = None
    state: dict[str, Any] = field(default_factory=dict)
    record: Callable[..., None] = _no_record
    lock: CommandLock = field(default_factory=CommandLock)  # shared by a session's main agent and subagents
    shells: BackgroundShells = field(default_factory=BackgroundShells)  # commands left running (shared too)
    agents: Team = field(default_factory=Team)  # the session's subagents (shared too)
    schedule: Schedule = field(default_factory=Schedule)  # its /loop and scheduled prompts (shared too)
    checkpoints: Checkpoints | None = None  # what file tools changed, turn by turn (for /rewind)
    # a side request to the model (a ModelRequest; its events), its usage counted as the agent's
    ask_model: Callable[[Any], AsyncIterator[Any]] | None = None
    # whether an allow rule names this tool and content (not the tool alone): what a rule must open
    rule_names: Callable[[str, str], bool] | None = None
    # whether the model in use reads PDFs given as document blocks (None: not known to)
    reads_documents: Callable[[], bool] | None = None
    # seconds a tool's call may take, by tool name or pattern (`mcp__github__*`): the settings' toolTimeouts
    timeouts: dict[str, float] = field(default_factory=dict)


class ToolInput(BaseModel):
    """The base of the built-in tools' input models. Each builds its validator and schema when first
    used, not at start-up: a deferred tool the model never loads never pays for them."""

    model_config = ConfigDict(defer_build=True)


class Tool(ABC, Generic[InputT]):
    name: str
    description: str
    input_model: type[InputT]
    read_only: bool = False  # every call only looks (read-only calls of one turn run side by side)
    kind: ToolKind = "other"
    # rarely needed: with tool search on, its definition is sent only once ToolSearch has loaded it
    deferred: bool = False

    @abstractmethod
    async def run(self, args: InputT, ctx: ToolContext) -> ToolResult: ...

    def refusal(self, args: InputT, ctx: ToolContext) -> str | None:
        """Why this call cannot run at all, when that is known before anyone is asked (no sandbox for
        a command, a file not read before its edit): the user is not asked to approve a call that
        would fail. The tool still checks again when it runs."""
        return None

    def rule_content(self, args: InputT, ctx: ToolContext) -> str | None:
        """What permission rules match against: the command, or the absolute path it touches."""
        return None

    def is_read_only(self, args: InputT, ctx: ToolContext) -> bool:
        """Whether this call only looks; a tool that is read-only for some inputs says so per call
        (a Bash line that only looks is asked about in plan mode rather than refused)."""
        return self.read_only

    def is_concurrency_safe(self, args: InputT, ctx: ToolContext) -> bool:
        """Whether this call may run beside the other such calls of its turn: it changes nothing a
        later call would see."""
        return self.is_read_only(args, ctx)

    def preview(self, args: InputT, ctx: ToolContext) -> str | None:
        """What a person deciding whether to allow the call should see (a diff), if not the input."""
        return None

    def restore(self, ctx: ToolContext, records: Mapping[str, dict[str, Any]]) -> None:
        """Take back the tool's state from a resumed session: `records` holds the latest session-log
        line of each kind the tools recorded."""

    def carry_over(self, ctx: ToolContext) -> str | None:
        """Text that must outlive a compaction of the conversation (the task list), if any."""
        return None

    def spec(self) -> dict[str, Any]:
        schema = json.loads(_input_schema(self.input_model))  # a copy of its own, which a tool may trim
        return {"name": self.name, "description": self.description, "input_schema": schema}


@cache
def _input_schema(model: type[BaseModel]) -> str:
    """An input model's lean JSON schema, made once a process: an editor's agent process opens many
    sessions, and pydantic takes a millisecond or two for each schema."""
    return json.dumps(lean_schema(model.model_json_schema(by_alias=True)))


AnyTool = Tool[Any]

_NULL = {"type": "null"}
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")  # names -> schemas
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains")


def lean_schema(node: Any) -> Any:
    """A pydantic JSON schema as the model needs it. Every request carries every tool's schema, so
    what only pydantic uses goes: titles (the model reads names and descriptions), and the `null`
    branch of an optional field with its `default: null` (leaving the field out says the same, and
    the input model still takes either). Only schema keywords are walked: a property named `title`,
    or a default that holds one, stays."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: lean_schema(schema) for name, schema in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [lean_schema(schema) for schema in value]
        else:
            out[key] = lean_schema(value) if key in _SCHEMA_VALUES else value
    variants = out.get("anyOf")
    if isinstance(variants, list) and _NULL in variants and "default" in out and out["default"] is None:
        rest = [v for v in variants if v != _NULL]
        if len(rest) == 1 and isinstance(rest[0], dict):
            out = {**rest[0], **{k: v for k, v in out.items() if k not in ("anyOf", "default")}}
    return out


class Gate(Protocol):
    """Decides, before a validated call runs, whether it may: None to go ahead, the refusal, or
    the call to run in its place (the same tool with an input the person allowing it edited)."""

    async def __call__(self, call: Call) -> ToolResult | Call | None: ...


@record(frozen=True)
class Call:
    """One tool_use of the model's, checked against its tool: ready to run, or already answered."""

    block: ToolUseBlock
    tool: AnyTool | None = None
    args: BaseModel | None = None
    answer: ToolResult | None = None  # an unknown tool or invalid input: the result without running
    read_only: bool = False  # only looks (for a tool that is not always read-only: plan mode asks)
    concurrent: bool = False  # may run beside the turn's other concurrent calls


def _describe_validation(error: ValidationError) -> str:
    parts = []
    for e in error.errors():
        where = ".".join(str(p) for p in e["loc"]) or "input"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


def time_limit(name: str, timeouts: Mapping[str, float]) -> float | None:
    """The seconds `name`'s calls may take: its own entry, else the first pattern matching it."""
    if name in timeouts:
        return timeouts[name]
    return next((v for k, v in timeouts.items() if "*" in k and fnmatch.fnmatchcase(name, k)), None)


class ToolRegistry:
    def __init__(
        self, tools: Iterable[AnyTool] = (), withheld: Callable[[AnyTool], bool] | None = None
    ) -> None:
        # a tool every call of which would be refused (a deny rule naming the whole tool) is not
        # offered: the model would only waste turns on it, as Claude Code knows
        self.withheld = withheld
        self._tools: dict[str, AnyTool] = {}
        self._specs: dict[str, dict[str, Any]] = {}  # each tool's definition, made when first asked for
        self._all: list[dict[str, Any]] | None = None  # one list while nothing changes: its encoding is kept
        self._refreshers: list[Callable[[ToolRegistry], Awaitable[None]]] = []
        self.version = 0  # counts the changes to the tools, for what is derived from them
        # why a registered tool may not be called now (a deferred tool the model has not loaded)
        self.held: Callable[[str], str | None] | None = None
        for tool in tools:
            self.register(tool)

    def register(self, tool: AnyTool) -> None:
        if self.withheld is not None and self.withheld(tool):
            return
        self._tools[tool.name] = tool
        self._specs.pop(tool.name, None)
        self._all = None
        self.version += 1

    def unregister(self, name: str) -> None:
        if self._tools.pop(name, None) is not None:
            self._specs.pop(name, None)
            self._all = None
            self.version += 1

    def get(self, name: str) -> AnyTool | None:
        return self._tools.get(name)

    def on_refresh(self, hook: Callable[[ToolRegistry], Awaitable[None]]) -> None:
        """Run `hook` before each model request: tools that come and go (an MCP server's) are
        added or removed there, between requests."""
        self._refreshers.append(hook)

    async def refresh(self) -> None:
        for hook in self._refreshers:
            await hook(self)

    def __iter__(self) -> Iterator[AnyTool]:
        return iter(self._tools.values())

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        if self._all is None:
            self._all = [self.spec_of(tool) for tool in self._tools.values()]
        return self._all

    def spec_of(self, tool: AnyTool) -> dict[str, Any]:
        """`tool`'s definition, made once: a deferred tool's only when a request carries it."""
        spec = self._specs.get(tool.name)
        if spec is None:
            spec = self._specs[tool.name] = tool.spec()
        return spec

    def carry_over(self, ctx: ToolContext) -> list[str]:
        return [text for tool in self._tools.values() if (text := tool.carry_over(ctx))]

    def prepare(self, block: ToolUseBlock, ctx: ToolContext, input_error: str | None = None) -> Call:
        """Find the tool and validate the input; a call that cannot run carries its answer."""
        tool = self._tools.get(block.name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return Call(
                block, answer=ToolResult.error(f"Unknown tool '{block.name}'. Available tools: {available}.")
            )
        if self.held is not None and (why := self.held(block.name)) is not None:
            return Call(block, tool, answer=ToolResult.error(why))
        if input_error is not None:
            error = f"The input for {block.name} was not valid JSON ({input_error}). Send it again."
            return Call(block, tool, answer=ToolResult.error(error))
        try:
            args = tool.input_model.model_validate(block.input)
        except ValidationError as e:
            error = f"Invalid input for {block.name}: {_describe_validation(e)}"
            return Call(block, tool, answer=ToolResult.error(error))
        try:
            read_only = tool.is_read_only(args, ctx)
            concurrent = tool.is_concurrency_safe(args, ctx)
        except Exception:  # a classification that fails is no reason to fail the call: ask, run it alone
            read_only = concurrent = False
        return Call(block, tool, args, read_only=read_only, concurrent=concurrent)

    async def run(self, call: Call, ctx: ToolContext, gate: Gate | None = None) -> ToolResult:
        if call.answer is not None:
            return call.answer
        assert call.tool is not None and call.args is not None
        try:
            if (why := call.tool.refusal(call.args, ctx)) is not None:
                return ToolResult.error(why)
            if gate is not None:
                verdict = await gate(call)
                if isinstance(verdict, ToolResult):
                    return verdict
                if verdict is not None:
                    call = verdict
                    if call.answer is not None:
                        return call.answer
            assert call.tool is not None and call.args is not None
            limit = time_limit(call.tool.name, ctx.timeouts)
            if limit is None:
                return await call.tool.run(call.args, ctx)
            try:
                async with asyncio.timeout(limit):
                    return await call.tool.run(call.args, ctx)
            except TimeoutError:
                return ToolResult.error(
                    f"{call.tool.name} was stopped after {limit:g} s (toolTimeouts in the settings)."
                )
        except asyncio.CancelledError:
            raise
        except Exception as e:  # error-as-data: the model sees what broke and can try otherwise
            return ToolResult.error(f"{call.block.name} failed: {type(e).__name__}: {e}")

    async def call(
        self, block: ToolUseBlock, ctx: ToolContext, input_error: str | None = None, gate: Gate | None = None
    ) -> ToolResult:
        """Prepare and run one call."""
        return await self.run(self.prepare(block, ctx, input_error), ctx, gate)
