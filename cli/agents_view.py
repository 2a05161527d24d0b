"""Background agents in the REPL: the status line counts the running ones, an agent that ends while
the prompt waits starts a turn that brings its report to the model (a turn under way hears it at
its next step), and `/agents` lists the session's agents and stops them.

Esc and Ctrl-C stop the turn under way, never a background agent: `/agents stop ID|all` does, and
leaving the session stops them all.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from piton.cli.turns import TurnDriver
    from piton.core.team import Team
    from piton.core.workflows import Workflows
    from piton.runtime import Runtime
    from piton.session import Session


class AgentsWatch:
    """Follows one session's agents for the terminal."""

    def __init__(
        self,
        conversation: Session,
        driver: TurnDriver,
        say: Callable[[str, str], None],
        redraw: Callable[[], None],
    ) -> None:
        self.conversation, self.driver, self.say, self.redraw = conversation, driver, say, redraw
        self.team: Team = conversation.agent.context.agents
        self.team.queue()  # what the agents do is read here: what they spend is the session's cost
        self.team.listeners.append(self.changed)
        self._waiting: asyncio.Future[object] | None = None

    def changed(self) -> None:
        """An agent started, moved or ended: the totals and the status line anew, and its report
        goes to the model now when nothing else is under way, else when that ends."""
        queue, model = self.team.queue(), self.conversation.agent.config.model
        while not queue.empty():
            self.driver.totals.count(queue.get_nowait(), model)
        if self.team.has_news():
            task = self.driver.task
            if not self.driver.busy:
                self.driver.start(self._report())
            elif task is not None and task is not self._waiting:
                self._waiting = task
                task.add_done_callback(lambda _: asyncio.get_running_loop().call_soon(self.changed))
        self.redraw()

    async def _report(self) -> None:
        news = self.team.take_news()
        if not news:
            return
        for text in news:
            self.say(headline(text), "dim")
        await self.driver.drive(self.conversation.turn("\n\n".join(news)))


def headline(notification: str) -> str:
    """The line a notification shows on screen: its summary (`Agent "tests" finished`)."""
    found = re.search(r"<summary>(.*?)</summary>", notification)
    return f"● {found.group(1) if found else 'A background agent ended'}"


async def agents_command(team: Team, args: str, say: Callable[[str, str], None]) -> bool:
    """`/agents` (the session's agents, then the types), `/agents stop ID|all`. True: handled here,
    the types need not follow."""
    from piton.core.team import agent_row

    words = args.split()
    if words[:1] == ["stop"] and len(words) == 2:
        chosen = team.running() if words[1] == "all" else [r for r in [team.get(words[1])] if r is not None]
        if not chosen:
            say(f"No running background agent '{words[1]}'.", "yellow")
        for run in chosen:
            await team.stop(run)
            say(f"Stopped agent {run.label}.", "dim")
        return True
    runs = list(team)
    if runs:
        say("Agents of this session:", "bold")
        for run in runs:
            say(f"  {agent_row(run)}", "" if run.running else "dim")
        say("Stop one with /agents stop ID (or all).", "dim")
    return False


async def workflows_command(
    runtime: Runtime, args: str, say: Callable[[str, str], None], ask: Callable[[str], Awaitable[str]]
) -> None:
    """`/workflows [stop ID]`: the runs and the workflows there are; `/workflow NAME [args JSON]`
    (given here as `run NAME …`): start one, once the user approved its budget."""
    from piton.core.workflows import Workflows

    workflows = getattr(runtime.agent.tools.get("Workflow"), "workflows", None)
    if not isinstance(workflows, Workflows):
        say("No workflows here: write one in .piton/workflows/NAME.py (async def main(ctx)).", "dim")
        return
    words = args.split(maxsplit=2)
    if words[:1] == ["run"] and len(words) >= 2:
        await _start(runtime, workflows, words[1:], say, ask)
        return
    stopping = workflows.runs.get(words[1]) if words[:1] == ["stop"] and len(words) == 2 else None
    if stopping is not None:
        stopped = await workflows.stop(stopping)
        say(f"Stopped {stopping.id}." if stopped else f"{stopping.id} is not running.", "dim")
        return
    for run in workflows.runs.values():
        say(f"  {run.row()}", "" if run.state == "running" else "dim")
    for workflow in workflows.found.values():
        say(f"  {workflow.name}: {workflow.description} [{workflow.budget.describe()}]", "dim")


async def _start(
    runtime: Runtime,
    workflows: Workflows,
    words: list[str],
    say: Callable[[str, str], None],
    ask: Callable[[str], Awaitable[str]],
) -> None:
    import json

    from piton.core.safety.policy import SandboxPolicy

    workflow = workflows.found.get(words[0])
    if workflow is None:
        say(f"No workflow '{words[0]}'. Workflows: {', '.join(workflows.found)}.", "yellow")
        return
    try:
        given = json.loads(words[1]) if len(words) > 1 else {}
    except json.JSONDecodeError as e:
        say(f"piton: the arguments are not JSON: {e}", "yellow")
        return
    question = f"Run workflow {workflow.name} in the background, {workflow.budget.describe()}? [y/N] "
    if (await ask(question)).strip().lower() not in ("y", "yes"):
        return
    context = runtime.agent.context
    policy = context.policy or SandboxPolicy.create("workspace-write", context.cwd)
    run = workflows.start(workflow, given if isinstance(given, dict) else {}, policy)
    say(f"⟳ {run.id}: {workflow.name} started; /workflows shows its progress.", "dim")
