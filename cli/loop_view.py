"""`/loop` and scheduled prompts in the terminal: each due prompt goes to the model as a turn when no
other turn runs (a message you type meanwhile waits for it, as for any turn). A tick that found
nothing new takes one line on screen instead of an answer. Esc stops the tick under way; `/loop stop`
ends the loop; leaving the session ends everything scheduled.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from piton.core.schedule import Job, Schedule, ScheduleError, parse_interval

if TYPE_CHECKING:
    from collections.abc import Callable

    from piton.cli.turns import TurnDriver
    from piton.core.conversation.events import AgentEvent
    from piton.session import Session

QUIET = "no change"


def tick_prompt(job: Job) -> str:
    """What the model is sent for one tick of `job`."""
    if job.kind == "cron":
        return f"{job.prompt}\n\n(Scheduled prompt {job.id}, {job.cron.text if job.cron else ''}.)"
    pace = (
        "This loop is self-paced: call ScheduleWakeup to choose when to look again; without it, the "
        "loop ends after this tick."
        if job.self_paced
        else ""
    )
    return (
        f"{job.prompt}\n\n(/loop tick {job.ticks}. If nothing changed since the last tick, answer only: "
        f"{QUIET}. {pace})"
    )


def is_quiet(answer: str) -> bool:
    return answer.strip().strip(".").lower() == QUIET


class LoopWatch:
    """Sends one session's due prompts to the model, one turn at a time."""

    def __init__(self, conversation: Session, driver: TurnDriver, say: Callable[[str, str], None]) -> None:
        self.conversation, self.driver, self.say = conversation, driver, say
        self.schedule: Schedule = conversation.agent.context.schedule
        self.schedule.live = True
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while (job := await self.schedule.wait_due()) is not None:
            while self.driver.busy:  # after the turn under way; typed messages go first
                assert self.driver.task is not None
                await asyncio.wait([self.driver.task])
                await asyncio.sleep(0)
            if self.schedule.jobs.get(job.id) is not job:
                continue  # stopped meanwhile
            self.schedule.begin_tick(job)
            self.driver.start(self._tick(job))
            assert self.driver.task is not None
            await asyncio.wait([self.driver.task])

    async def _tick(self, job: Job) -> None:
        renderer, model = self.driver.renderer, self.conversation.agent.config.model
        assert renderer is not None
        kept: list[AgentEvent] = []
        answer = ""

        async def work() -> None:
            nonlocal answer
            from piton.core.conversation.events import Result

            async for event in self.conversation.turn(tick_prompt(job)):
                self.driver.totals.count(event, model)
                kept.append(event)
                answer = event.result if isinstance(event, Result) else answer
            if not is_quiet(answer):  # shown whole; a quiet tick takes one line below
                for event in kept:
                    renderer.handle(event)

        self.say(f"⟳ {job.id} · run {job.ticks} · {time.strftime('%H:%M:%S')}", "dim")
        finished = await self.driver.hold(work(), doing=f"{job.id}, run {job.ticks}")
        quiet = finished and is_quiet(answer)
        if quiet:
            self.say(f"  ⎿ {QUIET} ({job.quiet + 1} in a row)", "dim")
        if not self.schedule.end_tick(job, quiet=quiet) and job.kind == "loop":
            self.say(f"⟳ {job.id} ended: no next time was set (ScheduleWakeup).", "dim")


def loop_command(schedule: Schedule, args: str, say: Callable[[str, str], None]) -> None:
    """`/loop [interval] prompt`, `/loop stop`, and `/loop` alone: what is scheduled."""
    words = args.split(maxsplit=1)
    if not words:
        jobs = list(schedule.jobs.values())
        for job in jobs:
            say(f"  {job.describe()}", "")
        if not jobs:
            say(
                "Nothing is scheduled. /loop 5m <task> repeats a task; /loop <task> lets the model pace it.",
                "dim",
            )
        return
    if words == ["stop"]:
        stopped = schedule.stop_loop()
        say(
            f"Stopped {stopped.id} after {stopped.ticks} run(s)." if stopped else "No loop is running.", "dim"
        )
        return
    every = parse_interval(words[0])
    prompt = words[1] if every is not None and len(words) > 1 else args.strip()
    if every is not None and len(words) == 1:
        say("What should the loop do? /loop 5m <task>", "yellow")
        return
    try:
        job = schedule.start_loop(prompt, every)
    except ScheduleError as e:
        say(f"piton: {e}", "yellow")
        return
    pace = f"every {words[0]}" if every is not None else "self-paced (the model sets each next time)"
    say(f"⟳ {job.id}: {pace}; /loop stop ends it.", "dim")
