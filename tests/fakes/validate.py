"""The fake API's request checks: the 400s the Messages API answers, written from its documented rules.

Deliberately independent of Piton's code, so a request Piton builds wrongly is caught here.
"""

from __future__ import annotations

import re
from typing import Any

from piton.testing.script import sign
from tests.fakes.tool_references import request_problem

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_PARAMS = {
    "model",
    "max_tokens",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "stream",
    "metadata",
    "stop_sequences",
    "cache_control",
    "output_config",
    "service_tier",
    "container",
    "speed",
    "diagnostics",
    "inference_geo",
}  # temperature, top_p and top_k are gone from this API version
_BLOCK_TYPES = {"text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking", "document"}
_VERSION = re.compile(
    r"^claude-(?:(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?|(\d+)-(\d{1,2})-\w+)(?:-\d{8})?$"
)


def _model_version(model: str) -> tuple[int, int] | None:
    m = _VERSION.match(model)
    if not m:
        return None
    major = m.group(1) or m.group(3)
    minor = m.group(2) or m.group(4) or "0"
    return int(major), int(minor)


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _merge(messages: list[dict[str, Any]]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """Consecutive same-role messages, combined as the API combines them: (first index, role, blocks)."""
    merged: list[tuple[int, str, list[dict[str, Any]]]] = []
    for i, m in enumerate(messages):
        blocks = _blocks(m.get("content"))
        if merged and merged[-1][1] == m.get("role"):
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + blocks)
        else:
            merged.append((i, m.get("role", ""), list(blocks)))
    return merged


_SERVER_TOOLS = ("web_search_", "web_fetch_", "code_execution_")


def _check_text(where: str, block: dict[str, Any]) -> str | None:
    text = block.get("text")
    if not isinstance(text, str) or not text.strip():
        return f"{where}: text content blocks must contain non-whitespace text"
    return None


def _null_field(block: dict[str, Any]) -> str | None:
    for key, value in block.items():
        if value is None:
            return key
        if isinstance(value, dict) and (inner := _null_field(value)):
            return f"{key}.{inner}"
    return None


def _check_block(where: str, block: dict[str, Any]) -> str | None:
    if field := _null_field(block):
        return f"{where}.{field}: Input should be a valid value, not null"
    kind = block.get("type")
    if kind not in _BLOCK_TYPES:
        return f"{where}.type: Input tag '{kind}' found using 'type' does not match any of the expected tags"
    if kind == "text":
        return _check_text(where, block)
    if kind == "thinking":
        if "cache_control" in block:
            return f"{where}: thinking blocks cannot be marked with cache_control"
        if block.get("signature") != sign(block.get("thinking", "")):
            return f"{where}: Invalid `signature` in `thinking` block"
    if kind == "tool_use" and not isinstance(block.get("input"), dict):
        return f"{where}.input: Input should be a valid dictionary"
    if kind == "tool_result":
        content = block.get("content")
        if content is not None and not isinstance(content, str):
            for j, part in enumerate(content):
                if part.get("type") not in ("text", "image", "document", "tool_reference"):
                    return (
                        f"{where}.content.{j}: tool_result content must be text, image, document or "
                        "tool_reference blocks"
                    )
                if part.get("type") == "tool_reference" and not isinstance(part.get("tool_name"), str):
                    return f"{where}.content.{j}.tool_name: Field required"
                if part.get("type") == "text" and (problem := _check_text(f"{where}.content.{j}", part)):
                    return problem
    return None


def _check_thinking_config(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking")
    if thinking is None:
        return None
    kind = thinking.get("type")
    if thinking.get("display", "summarized") not in ("summarized", "omitted"):
        return "thinking.display: Input should be 'summarized' or 'omitted'"
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= body.get("max_tokens", 0):
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    elif kind == "adaptive":
        version = _model_version(str(body.get("model")))
        if version is not None and version < (4, 6):
            return f"thinking.type: adaptive thinking is not supported on {body.get('model')}"
    elif kind != "disabled":
        return f"thinking.type: Input tag '{kind}' does not match any of the expected tags"
    return None


def _check_output_config(body: dict[str, Any]) -> str | None:
    config = body.get("output_config")
    if config is None or "effort" not in config:
        return None
    effort = config["effort"]
    if effort not in ("low", "medium", "high", "xhigh", "max"):
        return (
            f"output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max', not {effort!r}"
        )
    version = _model_version(str(body.get("model")))
    if version is not None and version < (4, 5):
        return f"output_config.effort: effort is not supported on {body.get('model')}"
    return None


def _count_cache_control(body: dict[str, Any]) -> int:
    count = sum(1 for t in body.get("tools") or [] if "cache_control" in t)
    system = body.get("system")
    if isinstance(system, list):
        count += sum(1 for b in system if "cache_control" in b)
    for m in body.get("messages", []):
        count += sum(1 for b in _blocks(m.get("content")) if "cache_control" in b)
    return count


def validate_request(body: dict[str, Any], issued: dict[str, list[dict[str, Any]]]) -> str | None:
    """The message of the 400 the API would answer, or None for a request it accepts."""
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return f"{name}: Field required"
    for name in body:
        if name not in _PARAMS:
            return f"{name}: Extra inputs are not permitted"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    if problem := _check_thinking_config(body) or _check_output_config(body):
        return problem
    system = body.get("system")
    if isinstance(system, list):
        for i, block in enumerate(system):
            if problem := _check_text(f"system.{i}", block):
                return problem
    names: set[str] = set()
    for i, tool in enumerate(body.get("tools") or []):
        name = tool.get("name", "")
        if not _TOOL_NAME.match(name):
            return f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if name in names:
            return f"tools: Tool names must be unique ({name})"
        names.add(name)
        if tool.get("type", "custom") not in ("custom", None):
            if not str(tool["type"]).startswith(_SERVER_TOOLS):
                return f"tools.{i}.type: unknown tool type {tool['type']!r}"
            continue  # a server tool (web search) has no input schema
        if (tool.get("input_schema") or {}).get("type") != "object":
            return f"tools.{i}.input_schema.type: Input should be 'object'"
    if (count := _count_cache_control(body)) > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {count}."
    if problem := request_problem(body):
        return problem
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    return _check_messages(body, messages, issued)


def _check_messages(
    body: dict[str, Any], messages: list[dict[str, Any]], issued: dict[str, list[dict[str, Any]]]
) -> str | None:
    for i, m in enumerate(messages):
        if m.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        content = m.get("content")
        final_assistant = i == len(messages) - 1 and m.get("role") == "assistant"
        empty = (isinstance(content, str) and not content.strip()) or (
            isinstance(content, list) and not content
        )
        if empty and not final_assistant:
            return (
                f"messages.{i}: all messages must have non-empty content except for the optional final "
                "assistant message"
            )
        for j, block in enumerate(_blocks(content)):
            if problem := _check_block(f"messages.{i}.content.{j}", block):
                return problem
    uses_tools = any(
        b.get("type") in ("tool_use", "tool_result") for m in messages for b in _blocks(m.get("content"))
    )
    if uses_tools and not body.get("tools"):
        return "Requests which include `tool_use` or `tool_result` blocks must define tools."
    merged = _merge(messages)
    if merged[0][1] != "user":
        return 'messages: first message must use the "user" role'
    seen_ids: set[str] = set()
    for n, (i, role, blocks) in enumerate(merged):
        if role == "assistant":
            for b in blocks:
                if b.get("type") == "tool_use":
                    if b["id"] in seen_ids:
                        return f"messages.{i}: `tool_use` ids must be unique ({b['id']})"
                    seen_ids.add(b["id"])
            if problem := _check_pairing(merged, n):
                return problem
        elif problem := _check_results(merged, n):
            return problem
    return _check_thinking_loop(body, merged, issued)


def _check_pairing(merged: list[tuple[int, str, list[dict[str, Any]]]], n: int) -> str | None:
    i, _, blocks = merged[n]
    ids = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    if not ids:
        return None
    answered = set()
    if n + 1 < len(merged):
        answered = {b.get("tool_use_id") for b in merged[n + 1][2] if b.get("type") == "tool_result"}
    missing = [x for x in ids if x not in answered]
    if missing:
        where = merged[n + 1][0] if n + 1 < len(merged) else i
        return (
            f"messages.{where}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
            "next message."
        )
    return None


def _check_results(merged: list[tuple[int, str, list[dict[str, Any]]]], n: int) -> str | None:
    i, _, blocks = merged[n]
    previous = merged[n - 1][2] if n > 0 else []
    expected = {b.get("id") for b in previous if b.get("type") == "tool_use"}
    seen: set[str | None] = set()
    other_seen = False
    for j, b in enumerate(blocks):
        if b.get("type") != "tool_result":
            other_seen = True
            continue
        tid = b.get("tool_use_id")
        if other_seen:
            return f"messages.{i}.content.{j}: tool_result blocks must come before any other content"
        if tid not in expected:
            return (
                f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {tid}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            )
        if tid in seen:
            return f"messages.{i}.content.{j}: duplicate `tool_result` for {tid}"
        seen.add(tid)
    return None


def _check_thinking_loop(
    body: dict[str, Any],
    merged: list[tuple[int, str, list[dict[str, Any]]]],
    issued: dict[str, list[dict[str, Any]]],
) -> str | None:
    """With thinking on, the last assistant turn of a tool loop must start with its thinking block."""
    if (body.get("thinking") or {}).get("type") not in ("enabled", "adaptive"):
        return None
    last = next((entry for entry in reversed(merged) if entry[1] == "assistant"), None)
    if last is None:
        return None
    i, _, blocks = last
    tool_ids = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    reply = next((issued[t] for t in tool_ids if t in issued), None)
    if not reply or reply[0]["type"] not in ("thinking", "redacted_thinking"):
        return None
    first = blocks[0].get("type") if blocks else None
    if first not in ("thinking", "redacted_thinking"):
        return (
            f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. "
            "When `thinking` is enabled, a final `assistant` message must start with a thinking block."
        )
    return None


ANY_TOOL = {"name": "Read", "description": "Reads a file.", "input_schema": {"type": "object"}}


def history_problem(messages: list[dict[str, Any]]) -> str | None:
    """What the API would say of a request carrying these messages (and a tool, so tool blocks may appear)."""
    body = {"model": "claude-sonnet-5-5", "max_tokens": 100, "messages": messages, "tools": [ANY_TOOL]}
    return validate_request(body, issued={})
