"""Background shells in the REPL, in a real pseudo-terminal: one outlives the turn that started it
(and the model hears of it with the next message), one ends while the prompt waits, `/bashes`
shows and stops them, and leaving kills what still runs."""

from __future__ import annotations

import json
import os
import secrets
from functools import partial
from pathlib import Path
from typing import Any

import pexpect
import pytest

from piton.testing.script import Reply, ToolCall, reply
from tests.cli.terminal import PITON, PROMPT, Terminal, expect_text, spawn
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S, piton, processes_with, wait_until

pytestmark = pytest.mark.sandbox


def terminal_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "TERM": "xterm-256color"}


def asks_about(term: Terminal, command: str) -> bool:
    rows = term.display
    return any(
        command in above and "Allow? 1 yes" in "".join(rows[i + 1 : i + 4]) for i, above in enumerate(rows)
    )


def asks_in_background(term: Terminal, command: str) -> bool:
    return asks_about(term, command) and term.shows(
        "(left running in the background; /bashes lists and stops it)"
    )


def heartbeat() -> tuple[str, str]:
    """A loop that rewrites `beat` ten times a second, and the marker that finds its processes (its
    sleep's length, this test's own)."""
    marker = f"sleep 0.1{secrets.randbelow(10**6):06d}"
    return f"while :; do date +%s%N > beat; {marker}; done", marker


def beats(beat: Path) -> None:
    """Until the loop rewrites `beat` once more: it runs."""
    before = beat.read_text() if beat.exists() else None
    wait_until(lambda: beat.exists() and beat.read_text() != before, f"new write to {beat}")


def stopped(marker: str) -> None:
    """Until no process of the loop is left: none can write any more."""
    wait_until(lambda: not processes_with(marker), f"end of the processes running {marker!r}")


def user_texts(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


def test_background_shells_outlive_their_turn_are_listed_and_die_with_the_session(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    beat = project / "beat"
    loop, marker = heartbeat()
    serve = f"echo serving; {loop}"
    build = "until [ -e built ]; do sleep 0.05; done; echo built"  # ends when the test says so
    fake_api.add(
        reply(
            "Starting both.",
            ToolCall("Bash", {"command": serve, "run_in_background": True}),
            ToolCall("Bash", {"command": build, "run_in_background": True}),
        ),
        reply("Both are running."),
        reply("The server is still up."),
    )
    child = pexpect.spawn(
        PITON, cwd=str(project), env=terminal_env(), encoding="utf-8", timeout=CEILING_S, dimensions=(40, 100)
    )
    term = Terminal(child, 40, 100)
    try:
        term.pump(lambda: term.shows("/help"), "welcome")
        child.send("start the server and the build\r")
        for command in ("echo serving", build):
            # the question says the command will be left running (drawn with it, maybe a frame later)
            term.pump(partial(asks_in_background, term, command), f"the question about {command}")
            child.send("1\r")
        term.pump(lambda: term.shows("Both are running.") and term.shows("2 shells"), "two shells counted")
        beats(beat)  # the turn is over; the server runs on
        (project / "built").touch()
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
        term.pump(lambda: term.shows("Background shell bash_1 killed after"), "the kill, said once")
        assert sum("bash_1 killed" in row for row in term.rows()) == 1
        term.pump(lambda: not term.shows("1 shell"), "no shell counted")
        stopped(marker)
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert list((project / ".piton").iterdir()) == []  # made for the shells' sandbox: it stays, empty


def test_leaving_the_repl_kills_a_background_shell(fake_api: FakeAnthropicAPI, project: Path) -> None:
    beat = project / "beat"
    loop, marker = heartbeat()
    fake_api.add(
        reply("Starting it.", ToolCall("Bash", {"command": loop, "run_in_background": True})),
        reply("It runs."),
    )
    child = spawn(project)
    child.send("start it\r")
    child.expect_exact("Allow? 1 yes")
    child.send("1\r")
    expect_text(child, "It runs.")
    child.expect_exact(PROMPT)
    beats(beat)
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    stopped(marker)


def test_a_print_run_kills_its_background_shells_when_it_ends(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    """`piton -p` ends with its answer: a shell the model left running ends with it, in text and in
    stream-json, where the tool result carries the shell's id."""
    beat = project / "beat"
    loop, marker = heartbeat()

    def once_it_runs(body: dict[str, Any]) -> Reply:  # the run may end only once the shell is up
        beats(beat)
        return reply("Started.")

    fake_api.add(
        reply("Starting it.", ToolCall("Bash", {"command": loop, "run_in_background": True})),
        once_it_runs,
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
    stopped(marker)
