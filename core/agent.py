"""The ReAct loop: ask the model, run the tools it calls, feed the results back, until it is done.

`Agent.run` is an async generator of events; it never prints. The history is the state: every
message is appended (and logged) as it completes, and however a run ends (an answer, the turn
limit, an API error, an interrupt) every tool_use in it has its tool_result.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from piton.core.activation import Activation, ActiveSkills
from piton.core.activation_prep import ActivationPreparer
from piton.core.agent_view import AgentConversation
from piton.core.context.compaction import Compactor, context_limit
from piton.core.context.meter import ContextMeter, context_tokens
from piton.core.context.metrics import SessionMetrics
from piton.core.context.result_store import BRIEF_CAP, INLINE_CAP, ResultCapper
from piton.core.context.usage import Usage
from piton.core.conversation.endings import cut_off, describe_error, ending_notice, unfinished_result
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
    SubagentEvent,
    ToolFinished,
    ToolResultsMessage,
    ToolStarted,
)
from piton.core.conversation.messages import (
    FAILED_REQUEST,
    INTERRUPTED_REQUEST,
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.hooks.session import Hooks
from piton.core.models import model_info, resolve_alias
from piton.core.modes import PLAN_MODE_ENDED, PLAN_MODE_REMINDER, style_reminder
from piton.core.providers import ModelRequest, Provider, ProviderError
from piton.core.run_state import RunStats, Stop
from piton.core.safety.permissions import PermissionGate
from piton.core.tools import Call, CallScope, ToolContext, ToolRegistry, ToolResult, current_call


class Transcript(Protocol):
    """Where the agent logs what it appends (a session log, or nothing)."""

    def append_message(
        self,
        message: Message,
        *,
        usage: Usage | None = None,
        model: str | None = None,
        line_id: str | None = None,
    ) -> None: ...

    def record(self, kind: str, **data: object) -> None: ...

    def compacted(
        self, messages: Sequence[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        """Log that the history became `messages` (or the old one with `stubs` for some results)."""
        ...


class TurnObserver(Protocol):
    """Sees each event of the main agent's turns as it is yielded (telemetry); `ended` says a turn
    stopped without its `Result` (interrupted, or failed inside)."""

    def seen(self, event: AgentEvent) -> None: ...

    def ended(self) -> None: ...


class _Blind:
    """An observer that has failed: it sees nothing more."""

    def seen(self, event: AgentEvent) -> None:
        pass

    def ended(self) -> None:
        pass


class AfterTool(Protocol):
    """Looks at each finished call before the model sees its result (a client's PostToolUse hooks):
    returns the result to send, the same or with feedback added."""

    async def __call__(self, use: ToolUseBlock, result: ToolResult) -> ToolResult: ...


@dataclass(slots=True)
class AgentConfig:
    model: str
    system_prompt: str
    cwd: Path
    session_id: str
    max_turns: int | None = None
    thinking: bool = True
    context_window: int | None = None  # None: the model table's
    max_output_tokens: int | None = None  # None: the model table's
    skills_listing: str = ""  # the part of the system prompt that lists the skills (for /context)
    max_budget_usd: float | None = None  # the run stops before a turn once it has cost more
    effort: str | None = None  # low ... max: sent to models that take an effort level
    fallback_model: str | None = None  # the model to go on with once the API stays overloaded
    max_budget_tokens: int | None = None  # the run stops before a request once it has used more tokens
    output_style: str | None = None  # a style's name (not Default): the model is reminded each turn


MAX_KEPT_GOING = 8  # Stop hooks may send the agent back to work this often in one turn


class Agent:
    def __init__(
        self,
        provider: Provider,
        tools: ToolRegistry,
        config: AgentConfig,
        *,
        history: Sequence[Message] = (),
        transcript: Transcript | None = None,
        context: ToolContext | None = None,
        gate: PermissionGate | None = None,
        capper: ResultCapper | None = None,
        compactor: Compactor | None = None,
    ) -> None:
        self.provider = provider
        self.tools = tools
        self.config = config
        self.history: list[Message] = list(history)
        self.transcript = transcript
        self.context = context or ToolContext(cwd=config.cwd, session_id=config.session_id)
        self.gate = gate  # None: every call is allowed (tests, and callers that decided already)
        self.after_tool: AfterTool | None = None
        self.hooks: Hooks | None = None  # the settings' hooks (Stop, UserPromptSubmit, PreCompact…)
        self.agent_id: str | None = None  # a subagent's id (its stop is a SubagentStop)
        self.capper = capper
        self.compactor = compactor
        self.meter = ContextMeter()
        self.metrics = SessionMetrics()
        self._stats = RunStats()
        self._sent = 0  # messages the previous request sent (where its cache entry ends)
        self._skills = ActiveSkills()  # skills loaded in the current turn
        self._loaded: list[str] = []  # texts of skills loaded by the tool calls under way
        self._planning = False  # the last turn was in plan mode (the model was told so)
        self._fallen_back: str | None = None  # the fallback model, once the main one stayed overloaded
        self.prepare: ActivationPreparer | None = None  # runs a skill's `!`cmd`` lines, inlines `@file`s
        self.observer: TurnObserver | None = None  # None: nothing watches (no telemetry, no cost)

    def add_note(self, text: str) -> None:
        """Put something in the conversation for the model's next turn, without a turn now (a shell
        command the user ran, say). It joins the next prompt in the same request."""
        self._append(Message.user(text))

    def _mode_notes(self, mode: str) -> list[ContentBlock]:
        """What the model must know this turn: plan mode's rules, and once that it is over (its rules
        are still in the history); the output style it answers in."""
        if self.agent_id is not None:
            return []
        notes: list[ContentBlock] = []
        if self.config.output_style:
            notes.append(TextBlock(text=style_reminder(self.config.output_style)))
        was, self._planning = self._planning, mode == "plan"
        if self._planning:
            notes.append(TextBlock(text=PLAN_MODE_REMINDER))
        elif was:
            notes.append(TextBlock(text=PLAN_MODE_ENDED))
        return notes + self._shell_news(turn_start=True)

    def _shell_news(self, *, turn_start: bool = False) -> list[ContentBlock]:
        """What the background shells did since the model last heard (the main agent hears it: the
        shells are the session's, whoever started them)."""
        if self.agent_id is not None:
            return []
        news = self.context.shells.news(turn_start=turn_start)
        return [TextBlock(text=news)] if news else []

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
                    self.observer = observer = _Blind()
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
        self._stats = RunStats(denials_before=len(self.gate.denials) if self.gate else 0)
        self._skills = ActiveSkills()
        model = self.config.model = self._fallen_back or self.config.model
        mode = self.gate.permissions.mode if self.gate else "bypassPermissions"
        content: list[ContentBlock] = [TextBlock(text=prompt)] if isinstance(prompt, str) else list(prompt)
        if skill is not None:
            self._activate(skill)
        yield SessionStarted(
            self.config.session_id, self.config.model, str(self.config.cwd), self.tools.names(), mode
        )
        try:
            if skill is not None:  # inside the try: its commands may be interrupted like any call
                content.append(TextBlock(text=(await self._prepared(skill)).text))
            if self.hooks is not None and self.agent_id is None:
                verdict = await self.hooks.user_prompt(_prompt_text(content))
                for event in self.hooks.drain():
                    yield event
                if verdict.blocked is not None:
                    raise Stop(
                        "error_during_execution",
                        f"A UserPromptSubmit hook blocked the prompt: {verdict.blocked}",
                        errors=(verdict.blocked,),
                    )
                content += [TextBlock(text=text) for text in verdict.context]
            turn_id = turn_id or str(uuid.uuid4())
            if self.context.checkpoints is not None and self.agent_id is None:
                self.context.checkpoints.begin(turn_id, len(self.history), _prompt_text(content))
            content += self._mode_notes(mode)
            self._append(Message(role="user", content=content), line_id=turn_id)
            kept_going = 0  # times Stop hooks kept this turn going
            while True:
                done: MessageDone | None = None
                async for event in self._query():
                    if isinstance(event, MessageDone):
                        done = event
                    yield event
                if done is None:
                    raise RuntimeError("the provider's stream ended without a MessageDone")
                if not done.message.tool_uses:
                    notice = ending_notice(done, self._max_output())
                    if notice is not None:
                        yield Notice(notice)
                    go_on = await self._stop_hooks(kept_going > 0)
                    for event in self.hooks.drain() if self.hooks is not None else ():
                        yield event
                    if go_on is None or kept_going >= MAX_KEPT_GOING:
                        if go_on is not None:  # a hook that never lets go must not spend forever
                            yield Notice(f"Stop hooks kept the agent going {kept_going} times; it stops now")
                        raise Stop("success", done.message.text, done.stop_reason)
                    self._append(Message.user(f"Stop hook feedback:\n{go_on}"))
                    kept_going += 1
                    continue
                async for event in self._execute(done):
                    yield event
                for event in self.hooks.drain() if self.hooks is not None else ():
                    yield event
        except Stop as stop:
            yield self._result(stop)
        except ProviderError as e:
            yield self._result(Stop("error_during_execution", str(e), errors=(str(e),)))
        except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit):
            self._append(Message.user(INTERRUPTED_REQUEST))  # so the model knows, next turn, why it stopped
            raise
        except Exception as e:  # a bug of ours: the history says so, and the caller reports it
            self._append(Message.user(FAILED_REQUEST.format(reason=describe_error(e))))
            raise
        finally:  # a skill's model and allowed-tools last for the turn it was loaded in
            self.config.model = self._fallen_back or model
            if self.gate is not None:
                self.gate.skill_allow.clear()

    def _activate(self, skill: Activation) -> str | None:
        """Load `skill` into this turn, or say why it may not load."""
        refusal = self._skills.refusal(skill.name)
        if refusal is not None:
            return refusal
        self._skills.admit(skill.name)
        self.metrics.skill_activations += 1
        if self.gate is not None:
            self.gate.allow_for_turn(skill.allowed_tools)
        if skill.model:
            self.config.model = resolve_alias(skill.model)
        return None

    async def _prepared(self, skill: Activation) -> Activation:
        """`skill` with its commands run and its files inlined, when a preparer was given."""
        if self.prepare is None:
            return skill
        return await self.prepare(skill, self.context, self.gate)

    async def _stop_hooks(self, active: bool) -> str | None:
        """Why the hooks want the agent to go on instead of stopping (None: stop)."""
        if self.hooks is None:
            return None
        reason = await self.hooks.stop(
            active=active, subagent=self.agent_id is not None, agent_id=self.agent_id or ""
        )
        halt = self.hooks.take_halt()
        if halt is not None:
            raise Stop("success", halt, "hook_stopped")
        return reason

    async def _query(self) -> AsyncIterator[AgentEvent]:
        if self.hooks is not None and (halt := self.hooks.take_halt()) is not None:
            raise Stop("success", halt, "hook_stopped")
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
        if self.compactor is not None:
            async for event in self._counted(self.compactor.before_request(AgentConversation(self))):
                yield event
            if self.capper is not None:  # a window still this full gets briefer previews of big results
                full = self.context_used() >= self.context_limit()
                self.capper.cap = BRIEF_CAP if full else INLINE_CAP
        await self.tools.refresh()  # tools that come and go (MCP servers') change between requests
        request = ModelRequest(
            model=self.config.model,
            system=self.config.system_prompt,
            messages=self.history,
            tools=self.tools.specs(),
            thinking=self.config.thinking,
            max_tokens=self.config.max_output_tokens,
            cached_upto=self._sent,
            effort=self.config.effort,
        )
        self._sent = len(self.history)
        fallback = self.config.fallback_model
        try:
            async for event in self._streamed(request, fallback):
                if isinstance(event, MessageDone):
                    self._stats.api_seconds += event.api_seconds  # the wait on the API alone
                    self._stats.turns += 1
                    self.count_usage(event.model or self.config.model, event.usage)
                    if event.message.content:
                        self._append(event.message, usage=event.usage, model=event.model)
                    if event.usage.input_tokens or event.usage.cache_read_input_tokens:  # reported
                        self.meter.observe(event.usage, len(self.history))
                yield event
        except ProviderError as e:
            self._stats.api_seconds += e.api_seconds
            raise

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

    async def _execute(self, done: MessageDone) -> AsyncIterator[AgentEvent]:
        """Run the turn's tool calls: consecutive calls that only look run together, the others one
        by one. Results go back in one user message, in call order, whatever happens."""
        uses = done.message.tool_uses
        results: dict[str, ToolResultBlock] = {}
        self._loaded = []
        failure: Exception | None = None
        try:
            calls = [self.tools.prepare(use, self.context, done.input_errors.get(use.id)) for use in uses]
            if done.stop_reason == "max_tokens" and uses[-1].id in done.input_errors:
                # the last call's input is not malformed but cut off: say that, or it comes back as long
                cut = ToolResult.error(cut_off(self._max_output()))
                calls[-1] = dataclasses.replace(calls[-1], answer=cut)
            for batch in _batches(calls):
                for call in batch:
                    yield ToolStarted(call.block.id, call.block.name, call.block.input)
                async for event in self._run_batch(batch):
                    if isinstance(event, ToolFinished):
                        results[event.tool_use_id] = event.result.to_block(event.tool_use_id)
                    yield event
        except Exception as e:
            failure = e
            raise
        finally:
            blocks: list[ContentBlock] = [results.get(u.id) or unfinished_result(u.id, failure) for u in uses]
            blocks += [TextBlock(text=text) for text in self._loaded]  # skills loaded by these calls
            blocks += self._shell_news()
            message = Message(role="user", content=blocks)
            self._append(message)
        yield ToolResultsMessage(message)

    async def _call(self, call: Call, emit: Callable[[AgentEvent], None]) -> ToolFinished:
        started = time.monotonic()
        use = call.block
        scope = current_call.set(CallScope(use.id, emit))
        try:
            gate = self._permit if self.gate is not None else None
            result = await self.tools.run(call, self.context, gate)
            if self.after_tool is not None and call.answer is None:
                result = await self.after_tool(use, result)
        finally:
            current_call.reset(scope)
        if result.activation is not None:
            refusal = self._activate(result.activation)
            if refusal is None:
                self._loaded.append((await self._prepared(result.activation)).text)
            else:
                result = ToolResult.error(refusal)
        if self.capper is not None:
            result = self.capper.apply(use.name, use.id, result)
        seconds = time.monotonic() - started
        self.metrics.tool_call(use.name, seconds, result.is_error)
        return ToolFinished(use.id, use.name, result, seconds)

    async def _permit(self, call: Call) -> ToolResult | Call | None:
        assert self.gate is not None and call.tool is not None
        tool, args, block = call.tool, call.args, call.block
        content = tool.rule_content(args, self.context)
        decision = await self.gate.check(
            tool,
            content,
            block.id,
            block.input,
            preview=lambda: tool.preview(args, self.context),
            looks=call.read_only and not tool.read_only,
        )
        if decision.behavior != "allow":
            return ToolResult.error(f"The user did not permit this {tool.name} call: {decision.reason}.")
        if decision.updated_input is None or decision.updated_input == block.input:
            return None
        return self._edited(call, decision.updated_input)

    def _edited(self, call: Call, tool_input: dict[str, Any]) -> ToolResult | Call:
        """The call with the input its approver gave instead: validated as the model's would be,
        and still under the deny rules (an edit is allowed as what it became, not as what it was)."""
        assert self.gate is not None and call.tool is not None
        edited = self.tools.prepare(call.block.model_copy(update={"input": tool_input}), self.context)
        if edited.answer is not None or edited.args is None:
            return edited.answer or ToolResult.error("The edited input could not be used.")
        content = call.tool.rule_content(edited.args, self.context)
        decision = self.gate.permissions.decide(call.tool, content)
        if decision.behavior == "deny":
            return ToolResult.error(f"The edited {call.tool.name} call is denied: {decision.reason}.")
        return edited

    async def _run_batch(self, batch: list[Call]) -> AsyncIterator[AgentEvent]:
        """Run `batch` concurrently; yield what the calls report while they run (a subagent's events)
        and each result as it finishes."""
        queue: asyncio.Queue[AgentEvent | BaseException] = asyncio.Queue()

        def emit(event: AgentEvent) -> None:
            if isinstance(event, SubagentEvent):  # what subagents spend is this run's cost too
                inner = event.event
                if isinstance(inner, MessageDone | Compacted) and inner.usage is not None:
                    self.count_usage(inner.model or self.config.model, inner.usage)
            queue.put_nowait(event)

        async def call(prepared: Call) -> None:
            try:
                queue.put_nowait(await self._call(prepared, emit))
            except Exception as e:  # a bug of ours: surface it rather than wait forever
                queue.put_nowait(e)

        tasks = [asyncio.create_task(call(prepared)) for prepared in batch]
        try:
            remaining = len(tasks)
            while remaining:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                remaining -= isinstance(item, ToolFinished)
                yield item
        finally:
            pending = [t for t in tasks if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

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
            self.config.system_prompt, self.tools.specs(), self.history, limit=self.context_limit()
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

    def _append(
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

    def _max_output(self) -> int:
        return self.config.max_output_tokens or model_info(self.config.model).max_output_tokens

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


def _prompt_text(content: list[ContentBlock]) -> str:
    return "\n".join(b.text for b in content if isinstance(b, TextBlock))


def _batches(calls: list[Call]) -> list[list[Call]]:
    """Consecutive calls that may run side by side share a batch; any other is a batch of its own."""
    batches: list[list[Call]] = []
    for call in calls:
        if call.concurrent and batches and batches[-1][0].concurrent:
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches
