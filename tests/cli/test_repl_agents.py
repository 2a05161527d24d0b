"""Background agents in the REPL, in a real pseudo-terminal: the status line counts a running agent,
its end while the prompt waits starts a turn that brings its report to the model, and `/agents`
lists it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pexpect

from piton.testing.script import Reply, reply
from tests.cli.terminal import watched
from tests.cli.test_background_agents import WAIT_S, Router, background, notifications
from tests.fakes.fake_api import FakeAnthropicAPI


def test_an_agent_that_ends_while_the_prompt_waits_is_reported_to_the_model(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    release = threading.Event()

    def scout() -> Reply:
        release.wait(WAIT_S)  # the agent runs until the test has seen it counted
        return reply("found it in main.py")

    def parent(body: dict[str, Any]) -> Reply:
        heard = notifications(body)
        if heard:
            return reply(f"Scout says: {heard[-1]}.")
        if len(router.parent_bodies) == 1:
            return reply("Starting.", background("scout", "TASK-SCOUT: find it"))
        return reply("Started; waiting.")

    router = Router(parent, {"TASK-SCOUT": scout})
    fake_api.add(*[router] * 4)
    child, term = watched(project)
    try:
        child.send("find it in the background\r")
        term.pump(lambda: term.shows("Started; waiting.") and term.shows("1 agent"), "the agent counted")
        release.set()
        term.pump(lambda: term.shows('● Agent "job scout" finished'), "the end told at the prompt")
        term.pump(lambda: term.shows("Scout says: found it in main.py."), "the model's turn on the report")
        term.pump(lambda: not term.shows("1 agent"), "no agent counted")
        child.send("/agents\r")
        term.pump(lambda: term.shows("Agents of this session:"), "the list")
        assert any("(scout): general-purpose, completed (background)" in row for row in term.rows())
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        release.set()
        child.close(force=True)
    assert child.exitstatus == 0
    assert len(router.parent_bodies) == 3, "one turn for the message, one for the report"
