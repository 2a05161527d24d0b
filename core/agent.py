"""The ReAct loop: ask the model, run the tools it calls, feed the results back, until it is done.

`Agent.run` is an async generator of events; it never prints. The history is the state: every
message is appended (and logged) as it completes, and however a run ends (an answer, the turn
limit, an API error, an interrupt) every tool_use in it has its tool_result. What happens around
the loop (hooks, skills, checkpoints, the notes of a turn) is `TurnRules`'; running the calls of a
reply is `ToolRound`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any

from piton.core.activation import Activation
from piton.core.agent_parts import AgentConfig, AgentParts, Blind
from piton.core.agent_view import AgentConversation
from piton.core.context.compaction import Compactor, context_limit
from piton.core.context.meter import ContextMeter, context_tokens
from piton.core.context.metrics import SessionMetrics
from piton.core.context.result_store import BRIEF_CAP, INLINE_CAP
from piton.core.conversation.endings import describe_error
from piton.core.conversation.events import (
    AgentEvent,
    Compacted,
    Compacting,
    MessageDone,
    Notice,
    Result,
    SessionStarted,
    StreamEvent,
    StreamRetry,
)
from piton.core.conversation.messages import FAILED_REQUEST, INTERRUPTED_REQUEST, ContentBlock, Message
from piton.core.conversation.usage import Usage, UsageTotals
from piton.core.models import model_info, split_model
from piton.core.providers import ModelRequest, Provider, ProviderError
from piton.core.run_state import RunStats, Stop
from piton.core.tool_round import ToolRound
from piton.core.tools import ToolContext, ToolRegistry
from piton.core.turn_rules import TurnRules, no_answer


class Agent:
    def __init__(
        self,
        provider: Provider,
        tools: ToolRegistry,
        config: AgentConfig,
        *,
        history: Sequence[Message] = (),
        parts: AgentParts | None = None,
    ) -> None:
        parts = parts or AgentParts()
        self.provider = provider
        self.tools = tools
        self.config = config
        self.history: list[Message] = list(history)
        self.transcript = parts.transcript
        self.context = parts.context or ToolContext(cwd=config.cwd, session_id=config.session_id)
        self.gate = parts.gate  # None: every call is allowed (tests, and callers that decided already)
        self.capper = parts.capper
        self.compactor = parts.compactor
        self.hooks = parts.hooks
        self.after_tool = parts.after_tool  # steps a client may add to (`AfterToolChain.put`)
        self.observer = parts.observer
        self.prepare = parts.prepare
        self.agent_id = parts.agent_id
        self.deferred = parts.deferred
        self.meter = ContextMeter()
        self.metrics = SessionMetrics()
        self.rules = TurnRules(self)
        self._round = ToolRound(self, self.rules)
        self._stats = self._new_stats()
        self._sent = 0  # messages the previous request sent (where its cache entry ends)
        self._fallen_back: str | None = None  # the fallback model, once the main one stayed overloaded
        self._unpriced: set[str] = set()  # models whose missing price was told

    def add_note(self, text: str) -> None:
        """Put something in the conversation for the model's next turn, without a turn now (a shell
        command the user ran, say). It joins the next prompt in the same request."""
        self.append(Message.user(text))

    async def run(
        self,
        prompt: str | list[ContentBlock],
        *,
        skill: Activation | None = None,
        turn_id: str | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """One turn of the user's: `prompt`, and the skill or command it invoked (`/name args`).
        `turn_id` names the turn's checkpoint and its prompt's line in the session log."""
        async for event in self._observed(self._turn(prompt, skill, turn_id)):
            yield event

    async def _observed(self, events: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
        observer = self.observer
        if observer is None:
            async for event in events:
                yield event
            return
        finished = False
        try:
            async for event in events:
                finished = finished or isinstance(event, Result)
                try:
                    observer.seen(event)
                except Exception as e:  # watching a run must never end it
                    self.observer = observer = Blind()
                    yield Notice(f"telemetry stopped: {type(e).__name__}: {e}")
                yield event
        finally:
            # the turn's own cleanup (a result for every call, the interrupted note) runs now,
            # not whenever the collector gets to it
            await events.aclose()  # type: ignore[attr-defined]
            if not finished:
                with contextlib.suppress(Exception):
                    observer.ended()

    async def _turn(
        self, prompt: str | list[ContentBlock], skill: Activation | None, turn_id: str | None
    ) -> AsyncIterator[AgentEvent]:
        """Prompt, then ask the model and run the tools it calls until it calls none."""
        self._stats = self._new_stats()
        model = self.config.model = self._fallen_back or self.config.model
        self.rules.begin(skill)
        mode = self.gate.permissions.mode if self.gate else "bypassPermissions"
        yield SessionStarted(
            self.config.session_id, self.config.model, str(self.config.cwd), self.tools.names(), mode
        )
        try:
            async for event in self.rules.opening(prompt, skill, turn_id):
                yield event
            while True:
                done: MessageDone | None = None
                async for event in self._query():
                    done = event if isinstance(event, MessageDone) else done
                    yield event
                if done is None:
                    raise RuntimeError("the provider's stream ended without a MessageDone")
                rest = self._round.run(done) if done.message.tool_uses else self.rules.closing(done)
                async for event in rest:
                    yield event
                for event in self.rules.drained():
                    yield event
                if self.config.output is not None and self.config.output.given:
                    async for event in self.rules.answered():
                        yield event
        except Stop as stop:
            yield self._result(stop)
        except ProviderError as e:
            yield self._result(Stop("error_during_execution", str(e), errors=(str(e),), api_status=e.status))
        except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit):
            self.append(Message.user(INTERRUPTED_REQUEST))  # so the model knows, next turn, why it stopped
            raise
        except Exception as e:  # a bug of ours: the history says so, and the caller reports it
            self.append(Message.user(FAILED_REQUEST.format(reason=describe_error(e))))
            raise
        finally:  # a skill's model and allowed-tools last for the turn it was loaded in
            self.config.model = self._fallen_back or model
            if self.gate is not None:
                self.gate.skill_allow.clear()

    def _new_stats(self) -> RunStats:
        denials = len(self.gate.denials) if self.gate else 0
        return RunStats(denials_before=denials, usage=UsageTotals(prices=self.config.prices))

    def _within_limits(self) -> None:
        """Raise `Stop` when the run may not make another request: a hook said stop, or a limit of
        turns, dollars or tokens is reached."""
        self.rules.halt()
        output = self.config.output
        if output is not None and output.failed():  # values that never matched the schema
            raise no_answer()
        limit = self.config.max_turns
        if limit is not None and self._stats.turns >= limit:
            raise Stop("error_max_turns", f"Stopped after reaching the maximum of {limit} turns.")
        budget = self.config.max_budget_usd
        if budget is not None and self._stats.usage.cost_usd > budget:
            raise Stop("error_max_budget_usd", f"Stopped after spending more than the budget of ${budget}.")
        tokens = self.config.max_budget_tokens
        if tokens is not None and context_tokens(self._stats.usage.total) > tokens:
            raise Stop(
                "error_max_budget_tokens", f"Stopped after using more than the budget of {tokens:,} tokens."
            )

    async def _query(self) -> AsyncIterator[AgentEvent]:
        self._within_limits()
        if self.compactor is not None:
            async for event in self._counted(self.compactor.before_request(AgentConversation(self))):
                yield event
            if self.capper is not None:  # a window still this full gets briefer previews of big results
                full = self.context_used() >= self.context_limit()
                self.capper.cap = BRIEF_CAP if full else INLINE_CAP
        await self.tools.refresh()  # tools that come and go (MCP servers') change between requests
        if (unpriced := self._unpriced_notice()) is not None:
            yield unpriced
        tools, defers = self.offered_tools()
        request = ModelRequest(
            model=self.config.model,
            system=self.config.system_prompt,
            messages=self.history,
            tools=tools,
            thinking=self.config.thinking,
            max_tokens=self.config.max_output_tokens,
            cached_upto=self._sent,
            effort=self.config.effort,
            thinking_display=self.config.thinking_display,
            tool_references=defers,
        )
        self._sent = len(self.history)
        try:
            async for event in self._streamed(request, self.config.fallback_model):
                if isinstance(event, MessageDone):
                    self._done(event)
                yield event
        except ProviderError as e:
            self._stats.api_seconds += e.api_seconds
            raise

    def _done(self, event: MessageDone) -> None:
        """A reply is complete: counted, appended, and its usage read by the context meter."""
        self._stats.api_seconds += event.api_seconds  # the wait on the API alone
        self._stats.turns += 1
        self.count_usage(event.model or self.config.model, event.usage)
        if event.message.content:
            self.append(event.message, usage=event.usage, model=event.model)
        if event.usage.input_tokens or event.usage.cache_read_input_tokens:  # reported
            self.meter.observe(event.usage, len(self.history))

    def _unpriced_notice(self) -> Notice | None:
        """Once per model of another vendor whose price nobody knows: its cost counts as nothing."""
        model = self.config.model
        if model in self._unpriced or split_model(model)[0] is None:  # told already, or Claude's
            return None
        if model_info(model, self.config.prices).known:
            return None
        self._unpriced.add(model)
        return Notice(
            f"no price is known for {model}: its cost counts as $0 (add one under modelPrices in "
            "~/.piton/settings.json)"
        )

    async def _streamed(self, request: ModelRequest, fallback: str | None) -> AsyncIterator[StreamEvent]:
        """The provider's stream; when the model stays overloaded through every retry and nothing of
        the reply has come yet, the same request to the fallback model, which then serves the rest of
        the session (as Claude Code's `--fallback-model` does)."""
        started = False
        try:
            async for event in self.provider.stream(request):
                started = started or not isinstance(event, Notice | StreamRetry)
                yield event
        except ProviderError as e:
            overloaded = e.kind == "overloaded" and e.status == 529
            if not overloaded or started or not fallback or fallback == request.model:
                raise
            self._stats.api_seconds += e.api_seconds
            yield Notice(f"{request.model} is overloaded; going on with the fallback model {fallback}")
            self.config.model = self._fallen_back = fallback
            async for event in self.provider.stream(dataclasses.replace(request, model=fallback)):
                yield event

    def offered_tools(self) -> tuple[Sequence[dict[str, Any]], bool]:
        """The tool definitions the next request carries, and whether some are deferred (tool search)."""
        if self.deferred is None:
            return self.tools.specs(), False
        mode = self.gate.permissions.mode if self.gate else "bypassPermissions"
        window = self.context_window()
        return self.deferred.specs(self.config.model, self.history, mode=str(mode), window=window)

    def max_output(self) -> int:
        return self.config.max_output_tokens or model_info(self.config.model).max_output_tokens

    # -- the context window ------------------------------------------------------------------------
    def context_window(self) -> int:
        return self.config.context_window or model_info(self.config.model).context_window

    def context_limit(self) -> int:
        """Tokens at which compaction starts."""
        threshold = self.compactor.settings.threshold if self.compactor is not None else 0.8
        max_output = self.config.max_output_tokens or model_info(self.config.model).max_output_tokens
        return context_limit(self.context_window(), max_output, threshold)

    def context_used(self) -> int:
        # below the limit, the meter may answer without loading its tokenizer
        return self.meter.used(
            self.config.system_prompt, self.offered_tools()[0], self.history, limit=self.context_limit()
        )

    def count_usage(self, model: str, usage: Usage) -> None:
        self._stats.usage.add(model, usage)

    def replace_history(
        self, messages: list[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        """Swap the history for a compacted one; the session log records it so that a resumed
        session starts from there."""
        self.history = list(messages)
        self.meter.forget(self.history)
        self._sent = 0
        if self.context.checkpoints is not None and info.get("trigger") != "rewind":
            self.context.checkpoints.compacted()
        if self.transcript is not None:
            self.transcript.compacted(self.history, stubs=stubs, **info)

    async def compact(self, instructions: str | None = None) -> AsyncIterator[AgentEvent]:
        """Compact now (/compact), whatever the context's size."""
        compactor = self.compactor or Compactor()
        run = compactor.run(AgentConversation(self), "manual", instructions)
        async for event in self._observed(self._counted(run, instructions)):
            yield event

    async def _counted(
        self, events: AsyncIterator[AgentEvent], instructions: str | None = None
    ) -> AsyncIterator[AgentEvent]:
        async for event in events:
            if isinstance(event, Compacting) and self.hooks is not None:
                await self.hooks.pre_compact(event.trigger, instructions)
                for reported in self.hooks.drain():
                    yield reported
            if isinstance(event, Compacted):
                self.metrics.compactions += 1
            yield event

    def append(
        self,
        message: Message,
        *,
        usage: Usage | None = None,
        model: str | None = None,
        line_id: str | None = None,
    ) -> None:
        self.history.append(message)
        if self.transcript is not None:
            self.transcript.append_message(message, usage=usage, model=model, line_id=line_id)

    def _result(self, stop: Stop) -> Result:
        denials = tuple(self.gate.denials[self._stats.denials_before :]) if self.gate else ()
        result = self._stats.result(stop, self.config.session_id, denials, self.metrics.to_dict())
        if self.transcript is not None:
            self.transcript.record(
                "result",
                subtype=result.subtype,
                num_turns=result.num_turns,
                usage=result.usage.to_dict(),
                total_cost_usd=result.total_cost_usd,
            )
        return result
