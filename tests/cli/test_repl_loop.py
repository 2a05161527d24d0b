"""`/loop` in the REPL, in a real pseudo-terminal against the fake API: a task repeated every second
is sent as a turn per tick, a tick that found nothing new takes one line, `/loop stop` ends it, and a
message typed afterwards goes to the model as usual."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pexpect

from piton.testing.script import Reply, reply
from tests.cli.terminal import watched
from tests.fakes.fake_api import FakeAnthropicAPI


def ticks(fake: FakeAnthropicAPI) -> list[int]:
    """The tick numbers the requests carried, in order."""
    found = [re.search(r"/loop tick (\d+)", json.dumps(b["messages"][-1])) for b in fake.bodies]
    return [int(m.group(1)) for m in found if m]


def test_a_loop_ticks_collapses_quiet_runs_and_stops(fake_api: FakeAnthropicAPI, project: Path) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        last = json.dumps(body["messages"][-1])
        if "/loop tick 1." in last:
            return reply("The build is red: test_io fails.")
        if "/loop tick" in last:
            return reply("No change.")
        return reply("Stopped watching.")

    fake_api.add(*[answer] * 12)
    child, term = watched(project)
    try:
        child.send("/loop 1s check the build\r")
        term.pump(lambda: term.shows("every 1s; /loop stop ends it."), "the loop started")
        term.pump(lambda: term.shows("The build is red: test_io fails."), "the first tick's answer")
        term.pump(lambda: term.shows("no change (2 in a row)"), "two quiet ticks, a line each")
        assert not term.shows("No change."), "a quiet tick's answer is not shown whole"
        child.send("/loop stop\r")
        term.pump(lambda: term.shows("Stopped loop-"), "the stop")
        stopped_at = len(ticks(fake_api))
        child.send("anything else?\r")
        term.pump(lambda: term.shows("Stopped watching."), "a message after the loop")
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert ticks(fake_api) == list(range(1, stopped_at + 1)) and stopped_at >= 3
    assert "anything else?" in json.dumps(fake_api.bodies[-1]["messages"][-1])


def test_a_print_run_schedules_nothing_and_says_why(fake_api: FakeAnthropicAPI, project: Path) -> None:
    from piton.testing.script import ToolCall
    from tests.helpers import piton_here

    fake_api.add(
        reply(ToolCall("CronCreate", {"cron": "*/5 * * * *", "prompt": "check the build"})),
        reply(ToolCall("ScheduleWakeup", {"delaySeconds": 120, "reason": "again"})),
        reply("Not scheduled."),
    )
    done = piton_here("-p", "check the build every 5 minutes")
    assert (done.returncode, done.stdout) == (0, "Not scheduled.\n"), done.stderr
    told = json.dumps(fake_api.bodies[1]["messages"][-1]) + json.dumps(fake_api.bodies[2]["messages"][-1])
    assert "Scheduled prompts run while the terminal" in told and "no self-paced /loop is running" in told
