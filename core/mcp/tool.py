"""An MCP server's tool as a Piton tool: its name (`mcp__<server>__<tool>`), the server's input
schema as the tool's, and the server's result as a `ToolResult`.

The server validates the arguments itself (its schema may use any JSON Schema keyword), so any
object is accepted here; input that is not an object is an error result like any other tool's. A
tool whose annotations say `readOnlyHint` runs unasked, as Read does; the others ask in the default
mode. Results go through the agent's usual path, so a large one is stored and previewed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from piton.core.conversation.messages import Base64ImageSource, ImageBlock, TextBlock
from piton.core.tools import Tool, ToolContext, ToolKind, ToolResult

MAX_NAME = 64  # the Messages API's limit on a tool's name
MAX_DESCRIPTION = 2048  # as Claude Code: a server's essay about a tool would crowd out the prompt
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

McpPart = TextBlock | ImageBlock  # what an MCP server's content becomes
# (server, tool, arguments) -> the SDK's CallToolResult; raises `McpCallError`
Caller = Callable[[str, str, dict[str, Any]], Awaitable[Any]]


class McpCallError(Exception):
    """A call that did not reach a result (server down, timeout, protocol error): one line for the model."""


class McpInput(BaseModel):
    """Whatever object the model sends: the server checks it against its own schema."""

    model_config = ConfigDict(extra="allow")


def normalize(name: str) -> str:
    """Claude Code's normalisation: every character outside [A-Za-z0-9_-] becomes `_`."""
    return _UNSAFE.sub("_", name)


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, cut to the API's 64 characters with a short hash that keeps cut
    names apart (the `mcp__<server>__` prefix that permission rules name is kept)."""
    full = f"mcp__{normalize(server)}__{normalize(tool)}"
    if len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{full[: MAX_NAME - len(digest) - 1]}_{digest}"


def _schema(schema: Any) -> dict[str, Any]:
    """The server's schema as the API takes it: an object schema at the root."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    out = {k: v for k, v in schema.items() if k not in ("title", "$schema")}
    out["type"] = "object"
    return out


class McpTool(Tool[McpInput]):
    input_model = McpInput
    kind: ToolKind = "other"

    def __init__(self, server: str, remote: Any, caller: Caller, *, deferred: bool = True) -> None:
        """`remote` is the SDK's `Tool` as the server listed it. An MCP tool waits behind ToolSearch
        when tool search is on (servers list many tools), unless its server is `alwaysLoad`."""
        self.server = server
        self.deferred = deferred
        self.remote_name: str = remote.name
        self.name = tool_name(server, remote.name)
        description = (
            remote.description or ""
        ).strip() or f"The {remote.name} tool of the {server} MCP server."
        if len(description) > MAX_DESCRIPTION:
            description = description[: MAX_DESCRIPTION - 1] + "…"
        self.description = description
        self.schema = _schema(remote.input_schema)
        annotations = getattr(remote, "annotations", None)
        self.read_only = bool(annotations is not None and annotations.read_only_hint)
        self._caller = caller

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.schema}

    async def run(self, args: McpInput, ctx: ToolContext) -> ToolResult:
        try:
            result = await self._caller(self.server, self.remote_name, dict(args.model_extra or {}))
        except McpCallError as e:
            return ToolResult.error(str(e))
        return convert(result)


def _resource_text(resource: Any) -> list[McpPart]:
    uri, mime = str(resource.uri), getattr(resource, "mime_type", None)
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return [TextBlock(text=f"[resource {uri}]\n{text}" if text.strip() else f"[resource {uri}] (empty)")]
    blob = getattr(resource, "blob", "") or ""
    if mime in _IMAGE_TYPES:
        return [ImageBlock(source=Base64ImageSource(media_type=mime, data=blob))]
    size = len(blob) * 3 // 4
    return [TextBlock(text=f"[resource {uri}: {mime or 'binary'}, about {size:,} bytes, not shown]")]


def _block(item: Any) -> list[McpPart]:
    kind = getattr(item, "type", None)
    if kind == "text":
        return [TextBlock(text=item.text)] if item.text else []
    if kind == "image":
        if item.mime_type in _IMAGE_TYPES:
            return [ImageBlock(source=Base64ImageSource(media_type=item.mime_type, data=item.data))]
        return [TextBlock(text=f"[image of type {item.mime_type}, which cannot be shown]")]
    if kind == "audio":
        return [TextBlock(text=f"[audio of type {item.mime_type}, which cannot be shown]")]
    if kind == "resource_link":
        title = f" {item.name}" if getattr(item, "name", None) else ""
        return [TextBlock(text=f"[resource link{title}: {item.uri}]")]
    if kind == "resource":
        return _resource_text(item.resource)
    return [TextBlock(text=f"[content of type {kind} not shown]")]


def content_blocks(items: list[Any]) -> list[McpPart]:
    """MCP content items (of a result, a prompt's messages) as blocks the API takes."""
    return [b for item in items for b in _block(item)]


def convert(result: Any) -> ToolResult:
    """The SDK's `CallToolResult` as a Piton result: text, images, resources as lines naming their
    URI, structured content as JSON when there is no text; `isError` makes an error result."""
    blocks = content_blocks(result.content)
    structured = getattr(result, "structured_content", None)
    if structured is not None and not any(isinstance(b, TextBlock) for b in blocks):
        blocks.insert(0, TextBlock(text=json.dumps(structured, indent=2, ensure_ascii=False)))
    is_error = bool(result.is_error)
    texts = [b.text for b in blocks if isinstance(b, TextBlock)]
    first = next((t.strip().splitlines()[0] for t in texts if t.strip()), "")
    summary = first[:120] if is_error else f"{sum(len(t) for t in texts):,} characters"
    if all(isinstance(b, TextBlock) for b in blocks):
        return ToolResult("\n".join(texts), is_error=is_error, summary=summary)
    return ToolResult([*blocks], is_error=is_error, summary=summary)
