"""Prompts that come back on their own while Piton runs: a `/loop` (a task repeated on a fixed
interval, or self-paced: the model picks each next time with ScheduleWakeup) and scheduled prompts
(CronCreate, five-field cron expressions in local time).

The schedule only keeps time; the terminal sends each due prompt as a turn when no other turn runs
(`piton.cli.loop_view`). Nothing here outlives the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import field
from datetime import datetime, timedelta
from typing import Literal

from piton.core.changes import Changes
from piton.core.records import record

MIN_WAKE_S, MAX_WAKE_S = 60, 3600  # what ScheduleWakeup may ask for
CACHE_TTL_S = 300  # the prompt cache keeps a prefix this long after its last use
WARM_S = CACHE_TTL_S - 30  # a wake-up just past the cache's life is brought inside it
MIN_INTERVAL_S = 1.0
_FIELDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))  # minute hour day-of-month month day-of-week


class ScheduleError(ValueError):
    """A schedule that cannot be: the message says why, in one line."""


@record(frozen=True)
class Cron:
    """A five-field cron expression: the values each field allows."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 is Sunday
    any_day: bool  # day-of-month is `*`: only the weekday counts (and the other way round)
    any_weekday: bool

    def day_matches(self, moment: datetime) -> bool:
        day_ok = moment.day in self.days
        weekday_ok = (moment.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return day_ok and weekday_ok
        return day_ok or weekday_ok  # both given: either one will do, as cron has it

    def next_after(self, moment: datetime) -> datetime:
        """The first minute after `moment` the expression names (within four years)."""
        at = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        end = at + timedelta(days=366 * 4)
        while at < end:
            if at.month not in self.months:
                at = (at.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
            elif not self.day_matches(at):
                at = at.replace(hour=0, minute=0) + timedelta(days=1)
            elif at.hour not in self.hours:
                at = at.replace(minute=0) + timedelta(hours=1)
            elif at.minute not in self.minutes:
                at += timedelta(minutes=1)
            else:
                return at
        raise ScheduleError(f"the cron expression {self.text!r} names no time")


def parse_cron(text: str) -> Cron:
    """`*/5 * * * *`, `0 9 * * 1-5`, `30 8,12 1 * *`…; raises ScheduleError."""
    parts = text.split()
    if len(parts) != 5:
        raise ScheduleError(f"a cron expression has five fields (minute hour day month weekday): {text!r}")
    sets = [_field(part, low, high) for part, (low, high) in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in sets[4]) if parts[4] != "*" else frozenset(range(7))
    return Cron(text, sets[0], sets[1], sets[2], sets[3], weekdays, parts[2] == "*", parts[4] == "*")


def _field(part: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for item in part.split(","):
        body, _, step_text = item.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if body == "*":
                first, last = low, high
            elif "-" in body:
                first, last = (int(x) for x in body.split("-", 1))
            else:
                first = last = int(body)
        except ValueError:
            raise ScheduleError(f"not a cron field: {part!r}") from None
        top = 7 if high == 6 else high  # 7 is Sunday too
        if step < 1 or not low <= first <= last <= top:
            raise ScheduleError(f"cron field {part!r} is outside {low}-{high}")
        values.update(range(first, last + 1, step))
    return frozenset(values)


def parse_interval(text: str) -> float | None:
    """`30s`, `5m`, `2h`, `1d` in seconds; None for what is not an interval (the prompt's first word)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if len(text) < 2 or text[-1] not in units or not text[:-1].replace(".", "", 1).isdigit():
        return None
    return max(float(text[:-1]) * units[text[-1]], MIN_INTERVAL_S)


@record
class Job:
    id: str
    prompt: str
    kind: Literal["loop", "cron"]
    every_s: float | None = None  # a loop on a fixed interval
    cron: Cron | None = None
    recurring: bool = True
    next_at: float | None = None  # None: a self-paced loop waiting for its ScheduleWakeup
    ticks: int = 0
    quiet: int = 0  # ticks in a row that found nothing new
    created: float = field(default_factory=time.time)

    @property
    def self_paced(self) -> bool:
        return self.kind == "loop" and self.every_s is None

    def describe(self) -> str:
        if self.cron is not None:
            when = f"cron {self.cron.text}" + ("" if self.recurring else ", once")
        elif self.every_s is not None:
            when = f"every {_span(self.every_s)}"
        else:
            when = "self-paced"
        due = f", next at {time.strftime('%H:%M:%S', time.localtime(self.next_at))}" if self.next_at else ""
        return f"{self.id}: {when}{due}, {self.ticks} run(s) — {self.prompt}"


class Schedule:
    """The session's loop (one at a time) and scheduled prompts."""

    def __init__(self) -> None:
        self.live = False  # a front end sends the due prompts (the terminal); else nothing comes back
        self.jobs: dict[str, Job] = {}
        self.changes = Changes()
        self.listeners = self.changes.listeners

    @property
    def loop(self) -> Job | None:
        return next((j for j in self.jobs.values() if j.kind == "loop"), None)

    def start_loop(self, prompt: str, every_s: float | None) -> Job:
        """The loop, replacing any before it; its first tick is due now."""
        self.stop_loop()
        job = Job(f"loop-{secrets.token_hex(2)}", prompt, "loop", every_s=every_s, next_at=time.time())
        return self._add(job)

    def stop_loop(self) -> Job | None:
        job = self.loop
        if job is not None:
            self.remove(job.id)
        return job

    def add_cron(self, expression: str, prompt: str, recurring: bool = True) -> Job:
        cron = parse_cron(expression)
        first = cron.next_after(datetime.now()).timestamp()
        return self._add(
            Job(f"cron-{secrets.token_hex(2)}", prompt, "cron", cron=cron, recurring=recurring, next_at=first)
        )

    def remove(self, job_id: str) -> bool:
        gone = self.jobs.pop(job_id, None) is not None
        self._told()
        return gone

    def due(self, now: float | None = None) -> Job | None:
        now = time.time() if now is None else now
        ready = [j for j in self.jobs.values() if j.next_at is not None and j.next_at <= now]
        return min(ready, key=lambda j: j.next_at or 0.0) if ready else None

    def begin_tick(self, job: Job) -> None:
        """A due prompt is being sent: not due again while it runs (a cron job: at its next time)."""
        job.ticks += 1
        job.next_at = None
        if job.cron is not None:
            if job.recurring:
                job.next_at = job.cron.next_after(datetime.now()).timestamp()
            else:
                self.jobs.pop(job.id, None)
        self._told()

    def end_tick(self, job: Job, *, quiet: bool) -> bool:
        """Its turn ended: a loop on an interval is due again after it; a self-paced one that set no
        next time (ScheduleWakeup) ends. False: the job is over."""
        job.quiet = job.quiet + 1 if quiet else 0
        if job.every_s is not None:
            job.next_at = time.time() + job.every_s
        elif job.self_paced and job.next_at is None:
            self.jobs.pop(job.id, None)
        self._told()
        return job.id in self.jobs

    def close(self) -> None:
        """The session ends: nothing more comes back."""
        self.live = False
        self.jobs.clear()
        self._told()

    def wake(self, delay_s: float) -> tuple[float, str]:
        """ScheduleWakeup for the self-paced loop: the delay taken, and why it differs from the one
        asked for (clamped; a delay just past the prompt cache's life is brought inside it)."""
        job = self.loop
        if job is None or not job.self_paced:
            raise ScheduleError("no self-paced /loop is running: ScheduleWakeup is for one")
        taken, why = min(max(delay_s, MIN_WAKE_S), MAX_WAKE_S), ""
        if taken != delay_s:
            why = f"kept between {MIN_WAKE_S} s and {MAX_WAKE_S} s"
        if WARM_S < taken < 2 * CACHE_TTL_S:
            taken, why = WARM_S, f"brought under {CACHE_TTL_S} s so the prompt cache is still warm"
        job.next_at = time.time() + taken
        self._told()
        return taken, why

    async def wait_due(self) -> Job | None:
        """The next prompt that is due, waiting for it (or for a change of the schedule); None once
        the session has closed."""
        while self.live:
            job = self.due()
            if job is not None:
                return job
            times = [j.next_at for j in self.jobs.values() if j.next_at is not None]
            timeout = max(min(times) - time.time(), 0.0) if times else None
            changed = self._change()
            with contextlib.suppress(TimeoutError):  # the time came, or the schedule changed
                await asyncio.wait_for(changed.wait(), timeout)
        return None

    def _add(self, job: Job) -> Job:
        self.jobs[job.id] = job
        self._told()
        return job

    def _change(self) -> asyncio.Event:
        return self.changes.next()

    def _told(self) -> None:
        self.changes.tell()


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
