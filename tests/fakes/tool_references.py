"""Deferred tools as the Messages API treats them, for the fake API and its prompt cache.

From the tool search documentation: a tool definition marked `defer_loading: true` stays out of the
model's context (and out of the cached prompt prefix) until a `tool_reference` block in a tool
result names it; the API then shows the definition in the reference's place. Every referenced tool
must be defined in the request's `tools`, at least one tool must not be deferred, and a deferred
definition may not carry `cache_control`. The model cannot call a deferred tool nothing loaded: it
never saw it. Deliberately independent of Piton's code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _parts(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every part of every tool result's content in the request's messages."""
    for message in body.get("messages") or []:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if block.get("type") == "tool_result" else None
            yield from (p for p in inner if isinstance(p, dict)) if isinstance(inner, list) else ()


def referenced(body: dict[str, Any]) -> list[str]:
    """The tools the request's `tool_reference` blocks load, in order."""
    return [str(p.get("tool_name")) for p in _parts(body) if p.get("type") == "tool_reference"]


def request_problem(body: dict[str, Any]) -> str | None:
    """The 400 the API answers for the request's deferred tools and references, if any."""
    tools = body.get("tools") or []
    deferred = [t for t in tools if t.get("defer_loading")]
    if deferred and len(deferred) == len(tools):
        return "At least one tool must have defer_loading=false. All tools cannot be deferred."
    for index, tool in enumerate(tools):
        if tool.get("defer_loading") and "cache_control" in tool:
            return f"tools.{index}: a tool with defer_loading: true cannot also carry cache_control"
    names = {t.get("name") for t in tools}
    for name in referenced(body):
        if name not in names:
            return f"Tool reference '{name}' not found in available tools"
    return None


def uncallable(body: dict[str, Any], called: list[str]) -> str | None:
    """Why the model could not have made these calls: a deferred tool that no reference loaded."""
    loaded = set(referenced(body))
    hidden = {t.get("name") for t in body.get("tools") or [] if t.get("defer_loading")} - loaded
    unseen = [name for name in called if name in hidden]
    if not unseen:
        return None
    return (
        f"fake API: the model cannot call {', '.join(unseen)}: its definition is deferred "
        "(defer_loading) and no tool_reference in the conversation loaded it"
    )


def expanded(block: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """`block` as the model sees it: each `tool_reference` in a tool result stands for the tool's
    definition, so a changed definition is a changed prompt (and its tokens count there)."""
    content = block.get("content")
    if block.get("type") != "tool_result" or not isinstance(content, list):
        return block
    parts = [
        {**p, "definition": definitions.get(p.get("tool_name"))} if p.get("type") == "tool_reference" else p
        for p in content
    ]
    return {**block, "content": parts}


def definitions(body: dict[str, Any]) -> dict[str, Any]:
    """The request's tool definitions by name, as a reference shows them (no marks of the request's)."""
    return {
        t.get("name"): {k: v for k, v in t.items() if k not in ("defer_loading", "cache_control")}
        for t in body.get("tools") or []
    }
