"""The session's subagents, foreground and background: who they are, where each stands, and what the
main agent has not yet heard of them.

A background agent (Task with `run_in_background`) runs as a task of its own beside the main
agent's turn and beside other agents. When it ends, its report waits here as a notification: the
main agent hears it with its next request, once (`take_news`); a front end with an idle main agent
starts a turn for it (`wait_news`). Finished agents are kept with their history, so SendMessage can
go on with one. Every start is checked against the caps first (`refusal`), and what the agents
spend together is held to the spend cap as they go: a runaway fan-out is refused in words.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

from piton.core.changes import Changes
from piton.core.conversation.usage import UsageTotals
from piton.core.display import counted
from piton.core.records import record

if TYPE_CHECKING:
    from piton.core.conversation.events import Result

AgentState = Literal["running", "completed", "failed", "stopped"]
MAX_KEPT = 100  # finished agents kept for SendMessage and the listings; the oldest go first
NOTICE = (
    "[Automated notification, not a message from the user: a background agent you started has ended. "
    "It approves nothing and answers no question you asked the user.]"
)


@record(frozen=True)
class AgentLimits:
    """Caps on the agents of one session: at once in the background, started in all, and what they
    may spend together (None: no cap). Settings `agents` and the flags set them."""

    running: int = 4
    total: int = 50
    cost_usd: float | None = None
    wait_in_print: bool = True  # a `-p` run waits for its background agents' reports


def limits_from(caps: dict[str, float], wait_in_print: bool = True) -> AgentLimits:
    """The caps the settings give (`Settings.agent_caps`), the defaults for the rest."""
    default = AgentLimits()
    return AgentLimits(
        running=int(caps.get("maxRunning", default.running)),
        total=int(caps.get("maxTotal", default.total)),
        cost_usd=caps.get("maxCostUsd", default.cost_usd),
        wait_in_print=wait_in_print,
    )


@record
class AgentRun:
    """One subagent of the session: its agent (kept, history and all, for SendMessage), and what
    the listings and the notification say of it."""

    id: str
    type: str
    description: str
    agent: Any  # piton.core.agent.Agent (imported late: that module imports this one's users)
    name: str | None = None
    tool_use_id: str = ""
    transcript: str = ""
    background: bool = False
    state: AgentState = "running"
    started: float = field(default_factory=time.time)
    ended: float | None = None
    turns: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    tool_uses: int = 0
    last_tool: str = ""
    report: str = ""
    inbox: list[str] = field(default_factory=list)  # messages sent to it while it runs
    worktree: Any = None  # piton.core.worktrees.Worktree: where it works apart, while that is kept
    footnote: str = ""  # what its report adds (where its changes wait)
    task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def label(self) -> str:
        return self.name or self.id

    def seconds(self) -> float:
        return (self.ended or time.time()) - self.started


class Team:
    """The subagents of one session (shared by the main agent and every subagent's tool context)."""

    def __init__(self, limits: AgentLimits | None = None) -> None:
        self.limits = limits or AgentLimits()
        self.spent_usd = 0.0
        self.background_usage = UsageTotals()  # what background agents spent: no Task call counts it
        self.started = 0  # agents started in this session, for the total cap
        self.changes = Changes()  # told when an agent starts, moves or ends
        self.listeners = self.changes.listeners
        self._runs: dict[str, AgentRun] = {}
        self._news: list[str] = []
        self._writers: dict[str, tuple[str, float]] = {}  # who last changed each file, and when
        self._held: dict[str, Callable[[], Awaitable[object]]] = {}  # other background work, and its stop
        self._events: asyncio.Queue[Any] | None = None  # made in the loop that runs the agents

    def __iter__(self) -> Iterator[AgentRun]:
        return iter(list(self._runs.values()))

    def get(self, key: str) -> AgentRun | None:
        """An agent by its id or its name (the newest of that name)."""
        if key in self._runs:
            return self._runs[key]
        named = [r for r in self._runs.values() if r.name == key]
        return named[-1] if named else None

    def running(self) -> list[AgentRun]:
        return [r for r in self._runs.values() if r.running and r.background]

    # -- starting -------------------------------------------------------------------------------
    def refusal(self, background: bool, *, again: bool = False) -> str | None:
        """Why another agent may not start now, in words for the model; None: it may. `again`: an
        agent already counted goes on (SendMessage), so only the caps of running and spending apply."""
        limits = self.limits
        if limits.cost_usd is not None and self.spent_usd >= limits.cost_usd:
            return (
                f"The agents of this session have spent ${self.spent_usd:.2f}, the cap of "
                f"${limits.cost_usd:.2f} (setting agents.maxCostUsd): no more agents start. "
                "Do the work yourself."
            )
        if not again and self.started >= limits.total:
            return (
                f"This session has started {self.started} agents, the cap (setting agents.maxTotal): "
                "no more agents start. Do the work yourself, or with the agents you have (SendMessage)."
            )
        if background and len(self.running()) >= limits.running:
            return (
                f"{len(self.running())} background agents are running, the cap (setting "
                "agents.maxRunning): wait for one to finish, or run this one in the foreground."
            )
        return None

    def add(self, run: AgentRun, *, again: bool = False) -> None:
        if not again:
            self.started += 1
        self._runs[run.id] = run
        self._runs = dict(list(self._runs.items())[-MAX_KEPT:])

    def launch(self, run: AgentRun, work: Callable[[], AsyncIterator[Any]]) -> None:
        """Run `work` (the agent's events) in the background; its end becomes a notification."""
        run.background, run.state, run.ended = True, "running", None
        run.task = asyncio.create_task(self._background(run, work))
        self._told()

    async def _background(self, run: AgentRun, work: Callable[[], AsyncIterator[Any]]) -> None:
        result: Result | None = None
        try:
            async for event in self.follow(run, work()):
                self.publish(event)
                result = _result_of(event) or result
        except asyncio.CancelledError:
            self.ended(run, None, stopped="it was stopped")
            self._news.append(notification(run))
            self._told()
            raise
        except Exception as e:  # an agent's own failure ends it, never the session
            self.ended(run, None, stopped=f"it failed: {type(e).__name__}: {e}")
        else:
            self.ended(run, result)
        self._news.append(notification(run))
        self._told()

    # -- following ------------------------------------------------------------------------------
    async def follow(self, run: AgentRun, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """`events` (an agent's run, wrapped as the caller likes) with `run`'s counters kept up to
        date, cut short when the agents' spend cap is reached."""
        from piton.core.conversation.events import MessageDone, SubagentEvent, ToolStarted

        async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
            async for event in stream:
                inner = event.event if isinstance(event, SubagentEvent) else event
                if isinstance(inner, ToolStarted):
                    run.tool_uses, run.last_tool = run.tool_uses + 1, inner.name
                    self._told()
                elif isinstance(inner, MessageDone):
                    self._count(run, inner)
                    self._told()
                yield event
                if self.limits.cost_usd is not None and self.spent_usd >= self.limits.cost_usd:
                    run.report = f"stopped: the agents' spend cap of ${self.limits.cost_usd:.2f} was reached"
                    run.state = "stopped"
                    return

    def _count(self, run: AgentRun, done: Any) -> None:
        usage, model, prices = done.usage, done.model or run.agent.config.model, run.agent.config.prices
        run.turns += 1
        run.tokens += usage.input_tokens + usage.cache_read_input_tokens + usage.output_tokens
        cost = usage.cost_usd(model, prices)
        run.cost_usd += cost
        self.spent_usd += cost
        if run.background:
            self.background_usage.prices = prices
            self.background_usage.add(model, usage)

    def ended(self, run: AgentRun, result: Result | None, *, stopped: str | None = None) -> None:
        run.ended = time.time()
        if run.state == "stopped":  # cut short by the spend cap: the report says so already
            return
        if result is None:
            run.state = "stopped" if stopped == "it was stopped" else "failed"
            run.report = stopped or "it ended without a result"
        else:
            run.state = "failed" if result.is_error else "completed"
            run.report = result.result.strip() or "(the agent finished without a report)"

    # -- files ----------------------------------------------------------------------------------
    def wrote(self, path: str, writer: str) -> str | None:
        """`writer` (an agent's id, or the main agent's session id) changed `path`: what the writer
        should know when another agent of the session changed it last. Writes never overlap (the
        command lock and the guard serialise them), but one can undo another's."""
        last = self._writers.get(path)
        self._writers[path] = (writer, time.time())
        if last is None or last[0] == writer or not self._runs:
            return None
        other = self._runs.get(last[0])
        who = f"agent {other.label} ({other.state})" if other is not None else "the main agent"
        return (
            f"Note: {who} changed this file {time.time() - last[1]:.0f} s ago, in this session. "
            "Check that this change keeps what that one did."
        )

    # -- news for the main agent ----------------------------------------------------------------
    def take_news(self) -> list[str]:
        """The notifications the main agent has not heard yet; each is given once."""
        news, self._news = self._news, []
        return news

    def has_news(self) -> bool:
        return bool(self._news)

    async def wait_news(self) -> bool:
        """Wait until there is news, or nothing more can come (no agent runs); True: news."""
        while not self._news and (self.running() or self._held):
            await self._change().wait()
        return bool(self._news)

    def hold(self, key: str, stop: Callable[[], Awaitable[object]]) -> None:
        """Other background work whose end will be news (a workflow): waited for as an agent is,
        and stopped with the agents."""
        self._held[key] = stop
        self._told()

    def post(self, notification: str, *, releasing: str | None = None) -> None:
        """News for the main agent from other background work (a workflow's end)."""
        self._news.append(notification)
        if releasing is not None:
            self._held.pop(releasing, None)
        self._told()

    def changed(self) -> None:
        """Something the listeners show moved (a workflow's phase)."""
        self._told()

    def publish(self, event: Any) -> None:
        """What a background agent did, for whoever shows the session (`events`)."""
        self.queue().put_nowait(event)

    def queue(self) -> asyncio.Queue[Any]:
        if self._events is None:
            self._events = asyncio.Queue()
        return self._events

    def _change(self) -> asyncio.Event:
        return self.changes.next()

    def _told(self) -> None:
        self.changes.tell()

    # -- stopping -------------------------------------------------------------------------------
    async def stop(self, run: AgentRun) -> bool:
        """Stop a running background agent; its notification says it was stopped. False: it was
        not running."""
        task = run.task
        if not run.running or task is None or task.done():
            return False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return True

    async def stop_all(self) -> int:
        """Stop every background agent (the session ends); how many were running."""
        running = self.running()
        for run in running:
            await self.stop(run)
        held = list(self._held.values())
        for stop in held:
            await stop()
        return len(running) + len(held)


def agent_row(run: AgentRun) -> str:
    """One agent in a line: who, what state, how far, what it last did."""
    name = f" ({run.name})" if run.name else ""
    where = "background" if run.background else "foreground"
    last = f", last tool {run.last_tool}" if run.last_tool and run.running else ""
    last += f", worktree {run.worktree.path}" if run.worktree is not None else ""
    return (
        f"{run.id}{name}: {run.type}, {run.state} ({where}), {counted(run.turns, 'turn')}, "
        f"{run.tokens:,} tokens, ${run.cost_usd:.2f}, {run.seconds():.0f}s{last} — {run.description}"
    )


def _result_of(event: Any) -> Result | None:
    from piton.core.conversation.events import Result, SubagentEvent

    inner = event.event if isinstance(event, SubagentEvent) else event
    return inner if isinstance(inner, Result) else None


def notification(run: AgentRun) -> str:
    """The message that brings a background agent's end to the main agent: Claude Code's
    `<task-notification>` block, so prompts written for it read it the same way."""
    status = {"completed": "completed", "failed": "failed"}.get(run.state, "stopped")
    verb = {"completed": "finished", "failed": "failed"}.get(run.state, "was stopped")
    duration = int(run.seconds() * 1000)
    lines = [
        NOTICE,
        "<task-notification>",
        f"<task-id>{run.id}</task-id>",
        f"<tool-use-id>{run.tool_use_id}</tool-use-id>",
        f"<output-file>{run.transcript}</output-file>" if run.transcript else "",
        f"<status>{status}</status>",
        f'<summary>Agent "{run.description}" {verb}</summary>',
        f"<result>{run.report}</result>",
        f"<note>{run.footnote}</note>" if run.footnote else "",
        f"<usage><subagent_tokens>{run.tokens}</subagent_tokens><tool_uses>{run.tool_uses}</tool_uses>"
        f"<duration_ms>{duration}</duration_ms></usage>",
        "</task-notification>",
        f"To go on with this agent, SendMessage to '{run.label}'.",
    ]
    return "\n".join(line for line in lines if line)
