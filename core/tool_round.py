"""One round of tool calls: the calls of one reply, run as the permission gate allows, consecutive
calls that only look side by side and the others one by one, each result looked at by the
after-tool steps and capped, all of them back in one user message, in call order, whatever
happens (an interrupt, a failure of ours)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol

from piton.core.agent_parts import Working
from piton.core.conversation.endings import cut_off, unfinished_result
from piton.core.conversation.events import (
    AgentEvent,
    Compacted,
    MessageDone,
    SubagentEvent,
    ToolFinished,
    ToolResultsMessage,
    ToolStarted,
)
from piton.core.conversation.messages import ContentBlock, Message, ToolResultBlock
from piton.core.tools import Call, CallScope, Gate, ToolResult, current_call

if TYPE_CHECKING:
    from piton.core.agent_parts import AfterToolChain
    from piton.core.context.result_store import ResultCapper
    from piton.core.conversation.usage import Usage
    from piton.core.tools import ToolRegistry
    from piton.core.turn_rules import TurnRules


class Agent(Working, Protocol):
    """What of `piton.core.agent.Agent` a round uses (that module imports this one)."""

    tools: ToolRegistry
    after_tool: AfterToolChain
    capper: ResultCapper | None

    def count_usage(self, model: str, usage: Usage) -> None: ...


class ToolRound:
    def __init__(self, agent: Agent, rules: TurnRules) -> None:
        self.agent = agent
        self.rules = rules  # the skills the calls load, the news that joins their results

    async def run(self, done: MessageDone) -> AsyncIterator[AgentEvent]:
        """Run the calls of `done`, yielding what they report, then the message of their results."""
        agent = self.agent
        uses = done.message.tool_uses
        results: dict[str, ToolResultBlock] = {}
        failure: Exception | None = None
        try:
            calls = [agent.tools.prepare(use, agent.context, done.input_errors.get(use.id)) for use in uses]
            if done.stop_reason == "max_tokens" and uses[-1].id in done.input_errors:
                # the last call's input is not malformed but cut off: say that, or it comes back as long
                cut = ToolResult.error(cut_off(agent.max_output()))
                calls[-1] = dataclasses.replace(calls[-1], answer=cut)
            for batch in _batches(calls):
                for call in batch:
                    yield ToolStarted(call.block.id, call.block.name, call.block.input)
                async for event in self._batch(batch):
                    if isinstance(event, ToolFinished):
                        results[event.tool_use_id] = event.result.to_block(event.tool_use_id)
                    yield event
        except Exception as e:
            failure = e
            raise
        finally:
            blocks: list[ContentBlock] = [results.get(u.id) or unfinished_result(u.id, failure) for u in uses]
            message = Message(role="user", content=[*blocks, *self.rules.after_calls()])
            agent.append(message)
        yield ToolResultsMessage(message)

    async def _batch(self, batch: list[Call]) -> AsyncIterator[AgentEvent]:
        """Run `batch` concurrently; yield what the calls report while they run (a subagent's events)
        and each result as it finishes."""
        agent = self.agent
        queue: asyncio.Queue[AgentEvent | BaseException] = asyncio.Queue()

        def emit(event: AgentEvent) -> None:
            if isinstance(event, SubagentEvent):  # what subagents spend is this run's cost too
                inner = event.event
                if isinstance(inner, MessageDone | Compacted) and inner.usage is not None:
                    agent.count_usage(inner.model or agent.config.model, inner.usage)
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

    async def _call(self, call: Call, emit: Callable[[AgentEvent], None]) -> ToolFinished:
        agent = self.agent
        started = time.monotonic()
        use = call.block
        scope = current_call.set(CallScope(use.id, emit))
        asked = _Asked()  # the time the question took is the user's, not the tool's
        try:
            gate = asked.timing(self._permit) if agent.gate is not None else None
            result = await agent.tools.run(call, agent.context, gate)
            # PostToolUse is for a call that ran: not one a rule, a hook or the user refused
            if agent.after_tool and call.answer is None and not asked.denied:
                result = await agent.after_tool(use, result)
        finally:
            current_call.reset(scope)
        if result.activation is not None and (refusal := await self.rules.load(result.activation)):
            result = ToolResult.error(refusal)
        if agent.capper is not None:
            result = agent.capper.apply(use.name, use.id, result)
        seconds = time.monotonic() - started
        agent.metrics.tool_call(use.name, seconds - asked.seconds, result.is_error, denied=asked.denied)
        return ToolFinished(use.id, use.name, result, seconds)

    async def _permit(self, call: Call) -> ToolResult | Call | None:
        gate, context = self.agent.gate, self.agent.context
        assert gate is not None and call.tool is not None
        tool, args, block = call.tool, call.args, call.block
        decision = await gate.check(
            tool,
            tool.rule_content(args, context),
            block.id,
            block.input,
            preview=lambda: tool.preview(args, context),
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
        agent = self.agent
        assert agent.gate is not None and call.tool is not None
        edited = agent.tools.prepare(call.block.model_copy(update={"input": tool_input}), agent.context)
        if edited.answer is not None or edited.args is None:
            return edited.answer or ToolResult.error("The edited input could not be used.")
        content = call.tool.rule_content(edited.args, agent.context)
        decision = agent.gate.permissions.decide(call.tool, content)
        if decision.behavior == "deny":
            return ToolResult.error(f"The edited {call.tool.name} call is denied: {decision.reason}.")
        return edited


def _batches(calls: list[Call]) -> list[list[Call]]:
    """Consecutive calls that may run side by side share a batch; any other is a batch of its own."""
    batches: list[list[Call]] = []
    for call in calls:
        if call.concurrent and batches and batches[-1][0].concurrent:
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


class _Asked:
    """How long a call's permission check took (a question waits for the user), and whether it
    refused the call."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.denied = False

    def timing(self, permit: Gate) -> Gate:
        async def timed(call: Call) -> ToolResult | Call | None:
            started = time.monotonic()
            try:
                verdict = await permit(call)
            finally:
                self.seconds += time.monotonic() - started
            self.denied = isinstance(verdict, ToolResult)
            return verdict

        return timed
