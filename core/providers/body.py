"""The Messages API request body: its parameters (`build_params`), and the same body as UTF-8 JSON,
built incrementally (`BodyEncoder`).

The SDK, given parameters, deep-copies and re-encodes the whole body on every request: over a long
session that costs more than everything else the client does. The encoder hands it bytes instead,
encoding each message once and each tool list and system prompt once.

Cache breakpoints (at most 4, the API's limit): the end of the tool definitions (a session in
another directory, with another system prompt, still reads them), the system prompt, the end of
what the previous request sent, and the newest message. Fewer when there is no system prompt or
marks coincide; none for a request with `cache=False`. The tools' mark goes on the last tool that is
not deferred: the API keeps deferred definitions out of the cached prefix and refuses a mark on one.

A `tool_reference` block goes as it is only to a request that takes them (`tool_references`) and
carries the tool it names; otherwise it becomes a line of text, so that a history that loaded tools
stays valid for any model and any list of tools.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from piton.core.conversation.history import (
    ApiMessages,
    api_entry_ending_at,
    to_api_messages,
    with_breakpoint,
)
from piton.core.conversation.messages import Message, encode_json
from piton.core.models import model_info
from piton.core.providers import ModelRequest

EPHEMERAL = {"type": "ephemeral"}
MIN_THINKING_BUDGET = 1024  # the API's floor for `thinking: enabled`
MAX_THINKING_BUDGET = 16_000
_KEPT = 8  # conversations (and tool lists) whose encoding is kept: an agent, its subagents


def _max_tokens(request: ModelRequest) -> int:
    return request.max_tokens or model_info(request.model).max_output_tokens


def thinking_param(request: ModelRequest) -> dict[str, Any] | None:
    """Thinking per model: adaptive on newer ones, a budget on older ones (when max_tokens leaves room)."""
    if not request.thinking or _continues_without_thinking(request):
        return None
    info = model_info(request.model)
    budget = min(MAX_THINKING_BUDGET, _max_tokens(request) // 2)
    shown = {"display": request.thinking_display} if request.thinking_display else {}
    if info.thinking == "adaptive":
        return {"type": "adaptive", **shown}
    if info.thinking == "enabled" and budget >= MIN_THINKING_BUDGET:
        return {"type": "enabled", "budget_tokens": budget, **shown}
    return None


def _continues_without_thinking(request: ModelRequest) -> bool:
    """A tool loop whose last assistant turn has no thinking block (another vendor's model made it,
    or thinking was off then): with thinking on, the API refuses to continue it."""
    messages = list(request.messages)
    if not messages or not any(b.type == "tool_result" for b in messages[-1].content):
        return False
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    return last is not None and (
        not last.content or last.content[0].type not in ("thinking", "redacted_thinking")
    )


def output_config(request: ModelRequest) -> dict[str, Any] | None:
    """The effort level, for a model that takes one (others would refuse the request)."""
    if request.effort is None or not model_info(request.model).effort:
        return None
    return {"effort": request.effort}


def message_marks(
    request: ModelRequest, entries: int, ending_at: Callable[[int], int | None], role: Callable[[int], str]
) -> set[int]:
    """The API messages (by index) whose last block gets a breakpoint: the newest, and the one that
    ends exactly where the previous request ended, if it is a user message (never a thinking block)."""
    if not request.cache or not entries:
        return set()
    marks = {entries - 1}
    if request.cached_upto:
        previous = ending_at(request.cached_upto)
        if previous is not None and role(previous) == "user":
            marks.add(previous)
    return marks


def tools_mark(tools: Sequence[dict[str, Any]]) -> int | None:
    """Which tool definition carries the tools' cache breakpoint: the last one not deferred."""
    return next((i for i in range(len(tools) - 1, -1, -1) if not tools[i].get("defer_loading")), None)


def references_fit(request: ModelRequest, names: set[str]) -> bool:
    """Whether `tool_reference` blocks naming `names` may go as they are in `request`."""
    return not names or (request.tool_references and names <= {t.get("name") for t in request.tools})


def _as_text(part: dict[str, Any], keep: set[str]) -> dict[str, Any]:
    if part.get("type") != "tool_reference" or part.get("tool_name") in keep:
        return part
    return {"type": "text", "text": f"(The tool {part.get('tool_name')} was loaded here.)"}


def _references_as_text(messages: list[dict[str, Any]], request: ModelRequest) -> None:
    """Turn, in place, the `tool_reference` blocks `request` cannot carry into text."""
    keep = {str(t.get("name")) for t in request.tools} if request.tool_references else set()
    for index, entry in enumerate(messages):
        blocks = [
            {**b, "content": [_as_text(p, keep) for p in b["content"]]}
            if b.get("type") == "tool_result" and isinstance(b.get("content"), list)
            else b
            for b in entry["content"]
        ]
        messages[index] = {"role": entry["role"], "content": blocks}  # copies: wire forms are shared


def build_params(request: ModelRequest) -> dict[str, Any]:
    """The `messages.create` arguments for `request`, as data (what `BodyEncoder` encodes)."""
    params: dict[str, Any] = {"model": model_info(request.model).id, "max_tokens": _max_tokens(request)}
    if request.system:
        system: dict[str, Any] = {"type": "text", "text": request.system}
        params["system"] = [{**system, "cache_control": EPHEMERAL} if request.cache else system]
    if request.tools:
        tools = [dict(t) for t in request.tools]
        if request.cache and (mark := tools_mark(tools)) is not None:
            tools[mark]["cache_control"] = EPHEMERAL
        params["tools"] = tools
    messages = to_api_messages(request.messages)
    if not references_fit(request, {n for m in request.messages for n in m.tool_references}):
        _references_as_text(messages, request)
    marks = message_marks(
        request,
        len(messages),
        lambda count: api_entry_ending_at(request.messages, count),
        lambda index: str(messages[index]["role"]),
    )
    for index in marks:
        entry = messages[index]
        blocks = [*entry["content"][:-1], {**entry["content"][-1], "cache_control": EPHEMERAL}]
        messages[index] = {"role": entry["role"], "content": blocks}  # copies: wire forms are shared
    params["messages"] = messages
    thinking = thinking_param(request)
    if thinking is not None:
        params["thinking"] = thinking
    if (config := output_config(request)) is not None:
        params["output_config"] = config
    return params


class BodyEncoder:
    """`build_params(request)` plus `"stream": true`, as the bytes of the request body.

    Encodings are kept per conversation (the history list a request carries), per tool list and per
    system prompt; one encoder serves an agent, its subagents and its compactions alike.
    """

    def __init__(self) -> None:
        self._conversations: dict[int, ApiMessages] = {}
        self._tools: dict[tuple[int, bool], tuple[Sequence[dict[str, Any]], bytes]] = {}
        self._system: dict[tuple[str, bool], bytes] = {}

    def encode(self, request: ModelRequest) -> bytes:
        messages = self._messages(request.messages)
        if not references_fit(request, messages.references):
            # tools loaded for another model or list of tools (rare): the whole body, rewritten
            return encode_json({**build_params(request), "stream": True}).encode()
        marks = message_marks(request, len(messages), messages.entry_ending_at, messages.role)
        parts: list[bytes | memoryview] = [
            b'{"model":',
            encode_json(model_info(request.model).id).encode(),
            b',"max_tokens":',
            str(_max_tokens(request)).encode(),
        ]
        if request.system:
            parts += [b',"system":', self._system_json(request.system, request.cache)]
        if request.tools:
            parts += [b',"tools":', self._tools_json(request.tools, request.cache)]
        parts.append(b',"messages":')
        parts += messages.encoded(marks)
        thinking = thinking_param(request)
        if thinking is not None:
            parts += [b',"thinking":', encode_json(thinking).encode()]
        if (config := output_config(request)) is not None:
            parts += [b',"output_config":', encode_json(config).encode()]
        parts.append(b',"stream":true}')
        return b"".join(parts)

    def _messages(self, history: Sequence[Message]) -> ApiMessages:
        state = self._conversations.get(id(history))
        if state is None or state.history is not history:
            # a conversation nobody else holds is over (a history replaced by compaction): let it go
            for key, kept in list(self._conversations.items()):
                if sys.getrefcount(kept.history) <= 2:
                    del self._conversations[key]
            while len(self._conversations) >= _KEPT:
                del self._conversations[next(iter(self._conversations))]
            state = self._conversations[id(history)] = ApiMessages()
        state.sync(history)
        return state

    def _tools_json(self, tools: Sequence[dict[str, Any]], marked: bool) -> bytes:
        key = (id(tools), marked)
        kept = self._tools.get(key)
        if kept is not None and kept[0] is tools:
            return kept[1]
        encoded = [encode_json(tool).encode() for tool in tools]
        if marked and (mark := tools_mark(tools)) is not None:
            encoded[mark] = with_breakpoint(encoded[mark])
        result = b"[" + b",".join(encoded) + b"]"
        if len(self._tools) >= _KEPT:
            self._tools.clear()
        self._tools[key] = (tools, result)
        return result

    def _system_json(self, system: str, marked: bool) -> bytes:
        key = (system, marked)
        kept = self._system.get(key)
        if kept is None:
            block = encode_json({"type": "text", "text": system}).encode()
            kept = b"[" + (with_breakpoint(block) if marked else block) + b"]"
            if len(self._system) >= _KEPT:
                self._system.clear()
            self._system[key] = kept
        return kept
