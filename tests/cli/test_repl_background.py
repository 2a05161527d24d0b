"""Background shells in the REPL, in a real pseudo-terminal: one outlives the turn that started it
(and the model hears of it with the next message), one ends while the prompt waits, `/bashes`
shows and stops them, and leaving kills what still runs."""

from __future__ import annotations

import json
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

import pexpect
import pytest

from piton.testing.script import ToolCall, reply
from tests.cli.test_repl_resize import Terminal
from tests.cli.test_repl_terminal import PITON, PROMPT, expect_text, spawn
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton

pytestmark = pytest.mark.sandbox


def terminal_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "TERM": "xterm-256color"}


def asks_about(term: Terminal, command: str) -> bool:
    rows = term.display
    return any(
        command in above and "Allow? 1 yes" in "".join(rows[i + 1 : i + 3]) for i, above in enumerate(rows)
    )


def beats(beat: Path) -> bool:
    """Whether a file a loop rewrites every 0.1 s still changes."""
    before = beat.read_text()
    time.sleep(0.6)
    return beat.read_text() != before


def user_texts(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


def test_background_shells_outlive_their_turn_are_listed_and_die_with_the_session(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    beat = project / "beat"
    serve = "echo serving; while :; do date +%s%N > beat; sleep 0.1; done"
    fake_api.add(
        reply(
            "Starting both.",
            ToolCall("Bash", {"command": serve, "run_in_background": True}),
            ToolCall("Bash", {"command": "sleep 2; echo built", "run_in_background": True}),
        ),
        reply("Both are running."),
        reply("The server is still up."),
    )
    child = pexpect.spawn(PITON, cwd=str(project), env=terminal_env(), encoding="utf-8", dimensions=(40, 100))
    term = Terminal(child, 40, 100)
    try:
        term.pump(lambda: term.shows("/help"), "welcome")
        child.send("start the server and the build\r")
        for command in ("echo serving", "sleep 2; echo built"):
            term.pump(partial(asks_about, term, command), f"the question about {command}")
            child.send("1\r")
        term.pump(lambda: term.shows("Both are running.") and term.shows("2 shells"), "two shells counted")
        assert beats(beat)  # the turn is over; the server runs on

        term.pump(lambda: term.shows("Background shell bash_2 completed"), "the end told at the prompt")
        term.pump(lambda: term.shows("1 shell") and not term.shows("2 shells"), "one shell counted")
        child.send("/bashes\r")
        term.pump(lambda: any(r.startswith(" bash_2   completed") for r in term.rows()), "the list")
        assert any(r.startswith(" bash_1   running") and r.endswith(serve) for r in term.rows())
        child.send("/bashes show bash_1\r")
        term.pump(lambda: term.shows("  serving"), "the shell's output")

        child.send("is it up?\r")
        term.pump(lambda: term.shows("The server is still up."), "the answer")
        told = user_texts(fake_api.bodies[-1])
        assert "bash_2" in told and "finished with exit code 0" in told  # the end it missed
        assert "bash_1" in told  # and the one still running

        child.send("/bashes kill bash_1\r")
        term.pump(lambda: term.shows("Killed bash_1"), "the kill")
        term.pump(lambda: not term.shows("1 shell"), "no shell counted")
        assert not beats(beat)
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert list((project / ".piton").iterdir()) == []  # made for the shells' sandbox: it stays, empty


def test_leaving_the_repl_kills_a_background_shell(fake_api: FakeAnthropicAPI, project: Path) -> None:
    beat = project / "beat"
    fake_api.add(
        reply(
            "Starting it.",
            ToolCall(
                "Bash",
                {"command": "while :; do date +%s%N > beat; sleep 0.1; done", "run_in_background": True},
            ),
        ),
        reply("It runs."),
    )
    child = spawn(project)
    child.send("start it\r")
    child.expect_exact("Allow? 1 yes")
    child.send("1\r")
    expect_text(child, "It runs.")
    child.expect_exact(PROMPT)
    assert beats(beat)
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    time.sleep(0.3)
    assert not beats(beat)


def test_a_print_run_kills_its_background_shells_when_it_ends(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    """`piton -p` ends with its answer: a shell the model left running ends with it, in text and in
    stream-json, where the tool result carries the shell's id."""
    beat = project / "beat"
    loop = "while :; do date +%s%N > beat; sleep 0.1; done"
    fake_api.add(
        reply("Starting it.", ToolCall("Bash", {"command": loop, "run_in_background": True})),
        reply("Started."),
    )
    done = piton(
        project, "-p", "start it", "--allowedTools", "Bash", "--output-format", "stream-json", "--verbose"
    )
    assert done.returncode == 0, done.stderr
    results = [
        block
        for line in done.stdout.splitlines()
        if (event := json.loads(line))["type"] == "user"
        for block in event["message"]["content"]
        if block["type"] == "tool_result"
    ]
    assert "running in the background with ID: bash_1" in str(results[0]["content"])
    assert beat.exists() and not beats(beat)
