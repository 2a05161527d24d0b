"""Custom tools as Python functions: `@tool` turns a typed function into a tool the model calls
beside the built-ins. Its parameters' annotations are the input schema (validated by pydantic
before the function runs), its docstring the description. The function runs in the calling
process, not in the sandbox: it is the user's own code, asked about like any tool that changes
things unless it says it only looks (`read_only=True`)."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, create_model

from piton.core.conversation.messages import TextBlock
from piton.core.tools import Tool, ToolContext, ToolResult

ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FunctionTool(Tool[BaseModel]):
    """A Python function offered to the model as a tool."""

    kind = "other"

    def __init__(
        self,
        function: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        doc = inspect.getdoc(function) or ""
        self.description = (description or doc or f"The {self.name} tool.").strip()
        self.read_only = read_only
        self.input_model = _input_model(function, self.name)

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        values = {key: getattr(args, key) for key in type(args).model_fields}
        try:
            if inspect.iscoroutinefunction(self.function):
                out = await self.function(**values)
            else:  # a plain function may block: keep the event loop (and Esc) responsive
                out = await asyncio.to_thread(self.function, **values)
        except Exception as e:  # the model reads what went wrong, and may try again
            return ToolResult.error(f"{type(e).__name__}: {e}")
        return _result(out)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The function itself, still callable as written (for its own tests)."""
        return self.function(*args, **kwargs)


def _input_model(function: ToolFunction, name: str) -> type[BaseModel]:
    try:
        hints = get_type_hints(function)
    except (NameError, TypeError) as e:
        raise TypeError(f"@tool {name}: cannot read the parameters' types: {e}") from e
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"@tool {name}: *args and **kwargs cannot be described to the model")
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    model_name = "".join(part.capitalize() for part in name.split("_")) + "Input"
    return create_model(model_name, __base__=_Input, **fields)


def _result(out: Any) -> ToolResult:
    """What the function returned, as the model reads it: text as is, other values as JSON."""
    if isinstance(out, ToolResult):
        return out
    if out is None:
        return ToolResult("")
    if isinstance(out, str):
        return ToolResult(out)
    if isinstance(out, BaseModel):
        return ToolResult(out.model_dump_json(indent=2))
    try:
        return ToolResult(json.dumps(out, ensure_ascii=False, indent=2, default=str))
    except (TypeError, ValueError):
        return ToolResult([TextBlock(text=str(out))])


@overload
def tool(function: ToolFunction, /) -> FunctionTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, read_only: bool = False
) -> Callable[[ToolFunction], FunctionTool]: ...


def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
) -> FunctionTool | Callable[[ToolFunction], FunctionTool]:
    """`@tool` or `@tool(name=…, description=…, read_only=True)` over a function (sync or async)
    whose parameters are annotated; pass the result in `AgentOptions(tools=[...])`."""
    if function is not None:
        return FunctionTool(function)

    def wrap(f: ToolFunction) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, read_only=read_only)

    return wrap
