"""The schedule behind `/loop` and CronCreate: cron expressions as cron reads them, ScheduleWakeup's
clamped and cache-aware delays, and when a loop's next tick is due (or the loop ends)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import pytest

from piton.core.schedule import (
    CACHE_TTL_S,
    MAX_WAKE_S,
    MIN_WAKE_S,
    WARM_S,
    Schedule,
    ScheduleError,
    parse_cron,
    parse_interval,
)

SATURDAY = datetime(2026, 11, 28, 18, 7)


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("*/15 * * * *", SATURDAY, datetime(2026, 11, 28, 18, 15)),
        ("*/15 9-17 * * 1-5", SATURDAY, datetime(2026, 11, 30, 9, 0)),  # Monday morning
        ("0 0 29 2 *", SATURDAY, datetime(2028, 2, 29, 0, 0)),  # the next leap day
        ("30 8 1 * 0", SATURDAY, datetime(2026, 11, 29, 8, 30)),  # day and weekday: either will do
        ("0 12 * * 7", SATURDAY, datetime(2026, 11, 29, 12, 0)),  # 7 is Sunday too
        ("5,10 * * * *", datetime(2026, 11, 28, 18, 10), datetime(2026, 11, 28, 19, 5)),
    ],
)
def test_cron_expressions_name_the_times_cron_would(
    expression: str, after: datetime, expected: datetime
) -> None:
    assert parse_cron(expression).next_after(after) == expected


@pytest.mark.parametrize(
    ("expression", "said"),
    [
        ("* * * *", "five fields"),
        ("61 * * * *", "outside 0-59"),
        ("*/0 * * * *", "outside"),
        ("a * * * *", "not a cron field"),
    ],
)
def test_a_bad_cron_expression_is_one_readable_error(expression: str, said: str) -> None:
    with pytest.raises(ScheduleError, match=said):
        parse_cron(expression)


def test_intervals_read_as_people_write_them() -> None:
    assert [parse_interval(t) for t in ("30s", "5m", "2h", "1d", "0.2s", "check", "5")] == [
        30,
        300,
        7200,
        86400,
        1.0,  # at least a second
        None,
        None,
    ]


def test_schedule_wakeup_is_clamped_and_keeps_the_cache_warm() -> None:
    schedule = Schedule()
    with pytest.raises(ScheduleError, match="no self-paced /loop"):
        schedule.wake(120)
    schedule.start_loop("watch the deploy", None)
    assert schedule.wake(120) == (120, "")
    assert schedule.wake(5)[0] == MIN_WAKE_S and schedule.wake(10**6)[0] == MAX_WAKE_S
    taken, why = schedule.wake(CACHE_TTL_S + 10)
    assert taken == WARM_S and "cache is still warm" in why
    assert schedule.wake(3 * CACHE_TTL_S)[0] == 3 * CACHE_TTL_S, "well past the cache's life: as asked"


def test_a_self_paced_loop_ends_when_no_next_time_is_set() -> None:
    schedule = Schedule()
    job = schedule.start_loop("watch", None)
    assert schedule.due() is job, "the first tick is due at once"
    schedule.begin_tick(job)
    assert schedule.due() is None, "not due while it runs"
    schedule.wake(300)
    assert schedule.end_tick(job, quiet=False) and job.next_at is not None
    schedule.begin_tick(job)
    assert not schedule.end_tick(job, quiet=True) and schedule.loop is None


def test_an_interval_loop_is_due_again_after_each_tick_and_waiting_returns_it() -> None:
    schedule = Schedule()
    schedule.live = True
    job = schedule.start_loop("poll", 0.05)
    schedule.begin_tick(job)
    schedule.end_tick(job, quiet=True)
    assert job.quiet == 1 and job.next_at is not None and job.next_at > time.time()
    assert asyncio.run(asyncio.wait_for(schedule.wait_due(), 5)) is job
    schedule.close()
    assert asyncio.run(schedule.wait_due()) is None, "a closed schedule sends nothing more"
