"""The tools of prompts that come back on their own (`piton.core.schedule`): ScheduleWakeup paces a
self-paced `/loop`; CronCreate, CronList and CronDelete keep prompts scheduled while the terminal
runs. Deferred: most sessions schedule nothing."""

from __future__ import annotations

from pydantic import Field

from piton.core.schedule import Schedule, ScheduleError
from piton.core.tools import InputT, Tool, ToolContext, ToolInput, ToolResult

NOT_LIVE = "Scheduled prompts run while the terminal (piton without -p) runs; this run ends with its answer."


class _OnSchedule(Tool[InputT]):
    """A tool of the session's schedule: it changes no file, and waits behind ToolSearch."""

    read_only = True
    deferred = True

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule


class ScheduleWakeupInput(ToolInput):
    delaySeconds: float = Field(description="When to look again, in seconds (60 to 3600).")
    reason: str = Field(description="What the next look is for, in a few words.")


class ScheduleWakeup(_OnSchedule[ScheduleWakeupInput]):
    name = "ScheduleWakeup"
    description = (
        "In a self-paced /loop: when to run the loop's task again. Call it once per tick, with a delay "
        "that fits what you wait for. Under 270 s the prompt cache stays warm; a delay just past 300 s "
        "is brought back under it. Without a call the loop ends after this tick."
    )
    input_model = ScheduleWakeupInput

    async def run(self, args: ScheduleWakeupInput, ctx: ToolContext) -> ToolResult:
        try:
            taken, why = self.schedule.wake(args.delaySeconds)
        except ScheduleError as e:
            return ToolResult.error(str(e))
        note = f" ({why})" if why else ""
        return ToolResult(
            f"The loop runs again in {taken:g} s{note}: {args.reason}", summary=f"in {taken:g}s"
        )


class CronCreateInput(ToolInput):
    cron: str = Field(description='Five fields, local time: minute hour day month weekday ("*/10 * * * *").')
    prompt: str = Field(description="What to do each time, as a message to you.")
    recurring: bool = Field(default=True, description="false: once, at the next matching time.")


class CronCreate(_OnSchedule[CronCreateInput]):
    name = "CronCreate"
    description = (
        "Schedules a prompt to come back to you at the times a cron expression names, while this "
        "session runs in the terminal (not after it ends). Returns the job's id."
    )
    input_model = CronCreateInput

    async def run(self, args: CronCreateInput, ctx: ToolContext) -> ToolResult:
        if not self.schedule.live:
            return ToolResult.error(NOT_LIVE)
        try:
            job = self.schedule.add_cron(args.cron, args.prompt, args.recurring)
        except ScheduleError as e:
            return ToolResult.error(f"Not scheduled: {e}.")
        return ToolResult(f"Scheduled {job.describe()}", summary=job.id)


class CronListInput(ToolInput):
    pass


class CronList(_OnSchedule[CronListInput]):
    name = "CronList"
    description = "Lists the prompts scheduled in this session (and the /loop, if one runs)."
    input_model = CronListInput

    async def run(self, args: CronListInput, ctx: ToolContext) -> ToolResult:
        jobs = list(self.schedule.jobs.values())
        if not jobs:
            return ToolResult("Nothing is scheduled.", summary="none")
        return ToolResult("\n".join(j.describe() for j in jobs), summary=f"{len(jobs)} scheduled")


class CronDeleteInput(ToolInput):
    id: str = Field(description="The id CronCreate (or CronList) gave.")


class CronDelete(_OnSchedule[CronDeleteInput]):
    name = "CronDelete"
    description = "Removes a scheduled prompt (or the /loop) by its id."
    input_model = CronDeleteInput

    async def run(self, args: CronDeleteInput, ctx: ToolContext) -> ToolResult:
        if not self.schedule.remove(args.id):
            return ToolResult.error(f"Nothing is scheduled with the id {args.id!r}.")
        return ToolResult(f"Removed {args.id}.", summary=f"removed {args.id}")


def schedule_tools(schedule: Schedule) -> list[ScheduleWakeup | CronCreate | CronList | CronDelete]:
    return [ScheduleWakeup(schedule), CronCreate(schedule), CronList(schedule), CronDelete(schedule)]
