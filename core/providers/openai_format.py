"""The OpenAI Chat Completions format, both ways: Piton's messages (the Anthropic wire format) as
chat messages and tools, and a streamed reply as Piton's events.

A `tool_result` becomes a `tool` message right after the assistant's `tool_calls` (images in it
follow in a user message: tool messages take text only), images become data URLs, thinking is not
sent back (it carries no signature there), and the streamed deltas become the same events the
Anthropic provider yields, down to a `MessageDone` whose message is in Anthropic's format.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from piton.core.conversation.events import (
    MessageDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolInputDelta,
    ToolUseStart,
)
from piton.core.conversation.messages import (
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolReferenceBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.conversation.usage import Usage
from piton.core.models import OTHER_VENDORS
from piton.core.models import split_model as split_model
from piton.core.providers import ModelRequest
from piton.core.providers.accumulate import parse_tool_input

LOCAL = {
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
    "vllm": "http://localhost:8000/v1",
    "llamacpp": "http://localhost:8080/v1",
}
PROVIDERS = OTHER_VENDORS
_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens"}


def base_url(name: str, env: Mapping[str, str]) -> str:
    """Where `name`'s server is: `PITON_<NAME>_BASE_URL`, the server's own variable (`OPENAI_BASE_URL`,
    `OLLAMA_HOST`), or its usual local address."""
    explicit = env.get(f"PITON_{name.upper()}_BASE_URL")
    if explicit:
        return explicit
    if name == "openai":
        return env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    if name == "ollama" and (host := env.get("OLLAMA_HOST")):
        return f"{host if '://' in host else 'http://' + host}/v1"
    return LOCAL[name]


def _text_of(block: ToolResultBlock) -> tuple[str, list[ImageBlock]]:
    if isinstance(block.content, str):
        return block.content, []
    texts = [b.text for b in block.content if isinstance(b, TextBlock)]
    images = [b for b in block.content if isinstance(b, ImageBlock)]
    # a ToolSearch result: these models get every tool's definition up front, so it only says which
    loaded = [b.tool_name for b in block.content if isinstance(b, ToolReferenceBlock)]
    texts += [f"(The tool {name} was loaded here.)" for name in loaded]
    if any(isinstance(b, DocumentBlock) for b in block.content):
        texts.append("(a PDF was attached here, which this model cannot read)")
    return "\n".join(texts), images


def _image(block: ImageBlock) -> dict[str, Any]:
    source = block.source
    url = source.url if source.type == "url" else f"data:{source.media_type};base64,{source.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def chat_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The request's system prompt and messages as Chat Completions messages."""
    out: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
    for message in request.messages:
        blocks = message.content
        if message.role == "assistant":
            text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
            calls = [
                {
                    "id": b.id,
                    "type": "function",
                    "function": {"name": b.name, "arguments": json.dumps(b.input)},
                }
                for b in blocks
                if isinstance(b, ToolUseBlock)
            ]
            if text or calls:  # a turn of thinking alone says nothing another model can read
                out.append(
                    {"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})}
                )
            continue
        parts: list[dict[str, Any]] = []
        for block in blocks:
            if isinstance(block, ToolResultBlock):
                text, images = _text_of(block)
                error = "(the tool reported an error) " if block.is_error else ""
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": block.tool_use_id,
                        "content": error + (text or "(no output)"),
                    }
                )
                parts += [_image(i) for i in images]
            elif isinstance(block, TextBlock):
                parts.append({"type": "text", "text": block.text})
            elif isinstance(block, ImageBlock):
                parts.append(_image(block))
            elif isinstance(block, DocumentBlock):
                parts.append({"type": "text", "text": "(a PDF was attached, which this model cannot read)"})
        if parts:
            out.append({"role": "user", "content": parts})
    return out


def chat_tools(tools: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description", ""),
                "parameters": t.get("input_schema", {"type": "object", "properties": {}}),
            },
        }
        for t in tools
        if "input_schema" in t  # server tools (web search) have no client-side shape here
    ]


async def chat_events(chunks: Any, model: str) -> AsyncIterator[StreamEvent]:
    """The streamed chunks as the events the Anthropic provider yields, ending in a `MessageDone`
    whose message is in Anthropic's format."""
    text: list[str] = []
    calls = _Calls()
    stop, usage, message_id = None, Usage(), ""
    async for chunk in chunks:
        message_id = message_id or chunk.id
        if chunk.usage is not None:
            cached = getattr(chunk.usage.prompt_tokens_details, "cached_tokens", 0) or 0
            prompt = chunk.usage.prompt_tokens or 0
            usage = Usage(prompt - cached, chunk.usage.completion_tokens or 0, 0, cached)
        for choice in chunk.choices:
            delta = choice.delta
            stop = choice.finish_reason or stop
            extra = delta.model_extra or {}
            if reasoning := extra.get("reasoning_content") or extra.get("reasoning"):
                yield ThinkingDelta(str(reasoning))
            if delta.content:
                text.append(delta.content)
                yield TextDelta(delta.content)
            for call in delta.tool_calls or []:
                for event in calls.feed(call):
                    yield event
    content: list[ContentBlock] = [TextBlock(text="".join(text))] if "".join(text) else []
    uses, errors = calls.blocks()
    # a reply cut at the length limit is that, even when a tool call was under way in it
    reason = (
        "max_tokens" if stop == "length" else "tool_use" if uses else _STOP.get(stop or "stop", "end_turn")
    )
    yield MessageDone(
        message=Message(role="assistant", content=[*content, *uses]),
        usage=usage,
        stop_reason=reason,
        model=model,
        message_id=message_id,
        input_errors=errors,
    )


class _Calls:
    """The tool calls of a streamed reply, put together from their pieces. Servers that send no id
    (some local ones) get one unique in the conversation; some send every call at index 0, a new id
    starting the next one."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}  # in order: id, name, argument parts
        self._slots: dict[int, int] = {}  # the stream's tool call index -> the call it is now

    def feed(self, call: Any) -> list[StreamEvent]:
        calls, slot = self._calls, self._slots.get(call.index)
        if slot is None or (call.id and call.id != calls[slot]["id"] and calls[slot]["name"]):
            slot = self._slots[call.index] = len(calls)
            calls[slot] = {"id": call.id or f"call_{uuid.uuid4().hex[:16]}", "name": "", "args": []}
        known, fn, out = calls[slot], call.function, list[StreamEvent]()
        if fn is not None and fn.name and not known["name"]:
            known["name"] = fn.name
            out.append(ToolUseStart(known["id"], fn.name))
        if fn is not None and fn.arguments:
            known["args"].append(fn.arguments)
            out.append(ToolInputDelta(known["id"], fn.arguments))
        return out

    def blocks(self) -> tuple[list[ToolUseBlock], dict[str, str]]:
        """The calls as tool_use blocks, and the input errors of those whose JSON does not parse."""
        uses: list[ToolUseBlock] = []
        errors: dict[str, str] = {}
        for index in sorted(self._calls):
            call = self._calls[index]
            tool_input, error = parse_tool_input("".join(call["args"]) or "{}")
            if error is not None:
                errors[call["id"]] = error
            uses.append(ToolUseBlock(id=call["id"], name=call["name"], input=tool_input))
        return uses, errors


def error_message(error: Any) -> str:
    """The words of an API error, from its JSON body when it has one."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return " ".join(str(error).split())[:300]
