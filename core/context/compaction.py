"""Keeping a long conversation inside the context window.

Before each request, when the context would pass the limit (80% of the window by default, and never
so high that the reply would not fit), compaction runs in two phases:

1. Without an API call, older tool results are replaced by a stub naming the tool, the result's
   first line and where the whole text is saved; tool_use/tool_result pairs stay intact.
2. If that is not enough, the model summarises everything before a safe split point (never between
   a tool_use and its result). The summary replaces that part, followed by every message the user
   wrote there, verbatim, and the task list.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from importlib.resources import files
from string import Template
from typing import Protocol

from piton.core.context.result_store import ToolResultStore
from piton.core.context.summary import SUMMARY_HEADER as SUMMARY_HEADER
from piton.core.context.summary import (
    budgeted,
    skills_in_use,
    split_point,
    stub_tool_results,
    summary_message,
    transcript,
    user_messages,
)
from piton.core.conversation.events import (
    AgentEvent,
    Compacted,
    Compacting,
    MessageDone,
    Notice,
    StreamEvent,
    StreamRetry,
)
from piton.core.conversation.messages import (
    Message,
)
from piton.core.conversation.usage import Usage
from piton.core.providers import ModelRequest, ProviderError
from piton.core.records import record

_SUMMARY_MAX_TOKENS = 8_192


@record(frozen=True)
class CompactionSettings:
    enabled: bool = True
    threshold: float = 0.8  # of the window
    keep_results: int = 3  # the most recent tool-result messages stay whole in phase 1
    keep_fraction: float = 0.2  # of the limit: how much recent conversation stays verbatim in phase 2
    prompts_fraction: float = 0.1  # of the limit: the budget for the user's verbatim messages
    max_failures: int = 2  # compactions in a row that leave the context over the limit


def context_limit(window: int, max_output: int, threshold: float) -> int:
    """The token count at which compaction starts: the threshold, or lower if the reply needs room
    (at most a quarter of the window is held back for it, for windows smaller than the reply limit)."""
    return max(1, min(int(window * threshold), window - min(max_output, window // 4)))


# -- phase 1 ---------------------------------------------------------------------------------------


class Conversation(Protocol):
    """What compaction sees of a conversation, and the few things it may do to it."""

    @property
    def history(self) -> Sequence[Message]: ...

    @property
    def model(self) -> str: ...

    def used(self) -> int:
        """Tokens the context holds now."""
        ...

    def limit(self) -> int:
        """Tokens at which compaction starts."""
        ...

    def tokens(self, message: Message) -> int:
        """An estimate of one message's tokens."""
        ...

    def replace(
        self, messages: list[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        """Swap the history for the compacted one (and log it)."""
        ...

    def carry_over(self) -> list[str]:
        """Texts that must outlive the compaction (the task list)."""
        ...

    def ask(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send a request to the model (its usage counts as the conversation's)."""
        ...


class Compactor:
    def __init__(
        self, settings: CompactionSettings | None = None, store: ToolResultStore | None = None
    ) -> None:
        self.settings = settings or CompactionSettings()
        self.store = store
        self.failures = 0

    async def before_request(self, conversation: Conversation) -> AsyncIterator[AgentEvent]:
        """Compact if the next request would pass the limit."""
        if not self.settings.enabled or conversation.used() < conversation.limit():
            return
        if self.failures >= self.settings.max_failures:
            return  # said so already; the request goes as it is
        async for event in self.run(conversation, "auto"):
            yield event

    async def run(
        self, conversation: Conversation, trigger: str, instructions: str | None = None
    ) -> AsyncIterator[AgentEvent]:
        before = conversation.used()
        limit = conversation.limit()
        stubbed = False
        if trigger == "auto":  # asked for, the summary runs whatever: it replaces these results anyway
            history, stubs = stub_tool_results(conversation.history, self.settings.keep_results, self.store)
            stubbed = bool(stubs)
            if stubbed:
                conversation.replace(history, stubs=stubs, trigger=trigger, pre_tokens=before)
                if conversation.used() < limit:
                    self.failures = 0
                    yield _done(conversation, trigger, before, "tool-results")
                    return
        yield Compacting(trigger)
        summarised: list[Message] | None = None
        usage: Usage | None = None
        try:
            async for item in self._summarise(conversation, instructions):
                if isinstance(item, _Summary):
                    summarised, usage = item.messages, item.usage
                else:  # a retry or a notice of the summary request: its waits are not silent either
                    yield item
        except ProviderError as e:  # the API's trouble, not the history's: the next request tries again
            yield Notice(f"compaction failed: {e}")
            if stubbed:
                yield _done(conversation, trigger, before, "tool-results")
            return
        if summarised is not None:
            conversation.replace(summarised, trigger=trigger, pre_tokens=before)
            yield _done(conversation, trigger, before, "summary", usage)
        else:
            yield Notice("compaction found nothing it could summarise without splitting a tool call")
            if stubbed:
                yield _done(conversation, trigger, before, "tool-results")
        if conversation.used() < limit:
            self.failures = 0
            return
        self.failures += 1
        if self.failures == self.settings.max_failures:
            yield Notice(
                f"compaction ran {self.failures} times without bringing the context under {limit:,} tokens; "
                "it stops trying. Start a new session (/clear), or use a model with a larger window."
            )

    async def _summarise(
        self, conversation: Conversation, instructions: str | None
    ) -> AsyncIterator[StreamRetry | Notice | _Summary]:
        """What the summary request reports as it goes, then the compacted history (a `_Summary`),
        if there is a point to split at."""
        history = list(conversation.history)
        counts = [conversation.tokens(m) for m in history]
        limit = conversation.limit()
        split = split_point(history, counts, int(limit * self.settings.keep_fraction))
        if split is None:
            yield _Summary(None, None)
            return
        old, kept = history[:split], history[split:]
        template = Template(files("piton.core").joinpath("prompts/compact.md").read_text(encoding="utf-8"))
        extra = (
            f"\nThe user asks you to pay special attention to this: {instructions}\n" if instructions else ""
        )
        prompt = template.safe_substitute(instructions=extra, transcript=transcript(old))
        request = ModelRequest(
            model=conversation.model,
            system="You summarise coding sessions precisely, for yourself to continue from.",
            messages=[Message.user(prompt)],
            thinking=False,
            max_tokens=_SUMMARY_MAX_TOKENS,
            cache=False,  # read once: a cache write (1.25x) would never be read back
        )
        summary, usage = "", None
        async for event in conversation.ask(request):
            if isinstance(event, MessageDone):
                summary, usage = event.message.text, event.usage
            elif isinstance(event, StreamRetry | Notice):
                yield event
        if not summary.strip():
            raise ProviderError("the model returned an empty summary", kind="stream")
        budget_chars = int(limit * self.settings.prompts_fraction) * 4
        messages, left_out = budgeted(user_messages(old), budget_chars)
        notes = conversation.carry_over()
        skills = skills_in_use(old, kept)
        yield _Summary([summary_message(summary, messages, left_out, notes, skills), *kept], usage)


@record(frozen=True)
class _Summary:
    messages: list[Message] | None
    usage: Usage | None


def _done(
    conversation: Conversation, trigger: str, before: int, phase: str, usage: Usage | None = None
) -> Compacted:
    from piton.core.context.meter import load_tokenizer

    load_tokenizer()  # the figure shown beside the status line's and /context's, measured as theirs
    return Compacted(
        trigger=trigger,
        pre_tokens=before,
        post_tokens=conversation.used(),
        phase=phase,
        usage=usage,
        model=conversation.model if usage is not None else None,
    )
