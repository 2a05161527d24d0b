"""SIGTERM, SIGHUP and SIGQUIT from outside, at chosen moments, to the real `piton` (`-p` and the
REPL) against the fake API: the turn is cancelled, one line says so on stderr, the exit code is
128 + the signal's number, and the session on disk is a valid history that can be resumed.

A hangup is also made the real way: the process gets a pseudo-terminal as its controlling terminal,
and the test closes the terminal's other end, as a closed terminal window does.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pyte
import pytest

from piton.core.conversation.history import is_valid
from piton.core.conversation.messages import INTERRUPTED_REQUEST, Message
from piton.core.conversation.session import SessionStore, load_session
from piton.testing.script import ToolCall, reply
from tests.cli.test_piton_command import PITON, piton
from tests.fakes.fake_api import FakeAnthropicAPI, Stall
from tests.helpers import CEILING_S, processes_with, wait_until

SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT]
IDS = [s.name for s in SIGNALS]
# run a program with the terminal on its stdin as its controlling terminal, as a login shell has it
CONTROLLING = (
    "import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def stalling() -> Stall:
    """A long answer that stops after its first words and goes no further while the test runs: a
    signal sent once the fake API is silent (`wait_for_silence`) always comes mid-stream."""
    return Stall(reply("word " * 400, chunk=5), after=20, seconds=CEILING_S)


def stopped_session(
    project: Path, code: int | None, err: str, sig: signal.Signals
) -> tuple[str, list[Message]]:
    """The checks every stop shares; the session's id and its messages."""
    session_id = SessionStore().latest(project)
    assert session_id is not None
    assert (code, err) == (
        128 + sig,
        f"piton: interrupted by {sig.name}; the session is saved (--resume {session_id} continues it)\n",
    )
    loaded = load_session(SessionStore().project_dir(project) / f"{session_id}.jsonl", session_id)
    assert loaded.warnings == [] and is_valid(loaded.messages)
    assert loaded.messages[-1].text == INTERRUPTED_REQUEST, "the model is told, next turn, why it stopped"
    return session_id, loaded.messages


def resumes(fake_api: FakeAnthropicAPI, session_id: str) -> None:
    fake_api.add(reply("Resumed."))
    done = piton("-p", "go on", "--resume", session_id)
    assert (done.returncode, done.stdout) == (0, "Resumed.\n"), done.stderr
    assert fake_api.rejections == [], "the API accepted the resumed history"
    assert fake_api.bodies[-1]["messages"][-1]["content"][-1]["text"] == "go on"


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PITON, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("sig", SIGNALS, ids=IDS)
def test_print_mode_stopped_mid_answer(
    fake_api: FakeAnthropicAPI, project: Path, sig: signal.Signals
) -> None:
    fake_api.add(stalling())
    proc = start("-p", "write a long answer")
    fake_api.wait_for_silence()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=CEILING_S)
    assert out == ""
    session_id, messages = stopped_session(project, proc.returncode, err, sig)
    assert [m.text for m in messages] == ["write a long answer", INTERRUPTED_REQUEST]
    resumes(fake_api, session_id)


@pytest.mark.sandbox
@pytest.mark.parametrize("sig", SIGNALS, ids=IDS)
def test_print_mode_stopped_while_a_command_sleeps(
    fake_api: FakeAnthropicAPI, project: Path, sig: signal.Signals
) -> None:
    marker = f"sleep {60 + sig}.25"
    call = ToolCall("Bash", {"command": f"touch started; {marker}"})
    fake_api.add(reply("Running it.", call))
    proc = start("-p", "run it", "--allowedTools", "Bash")
    wait_until(lambda: (project / "started").exists(), "start of the command")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=CEILING_S)
    assert out == ""
    session_id, messages = stopped_session(project, proc.returncode, err, sig)
    assert [m.role for m in messages] == ["user", "assistant", "user", "user"]
    [result] = messages[2].content
    assert result.type == "tool_result" and result.tool_use_id == call.id and result.is_error
    wait_until(lambda: not processes_with(marker), "end of the command")
    resumes(fake_api, session_id)


def terminal() -> tuple[int, int]:
    """A pseudo-terminal (its two ends) of 40 rows and 100 columns."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    return master, slave


class Answering(pyte.Screen):
    """The terminal's screen, which answers what the program asks of its terminal as a real one does
    (prompt_toolkit waits two seconds for where the cursor is, unanswered)."""

    def __init__(self, master: int) -> None:
        super().__init__(100, 40)
        self.master = master

    def write_process_input(self, data: str) -> None:
        with contextlib.suppress(OSError):  # the terminal was closed meanwhile
            os.write(self.master, data.encode())


class Screen:
    """What the program writes to its terminal, read as it comes (a full terminal would block it)."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.text = ""
        self._vt = pyte.Stream(Answering(master))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            if select.select([self.master], [], [], 0.05)[0]:
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    return
                chunk = data.decode("utf-8", "replace")
                self.text += chunk
                self._vt.feed(chunk)

    def wait_for(self, text: str) -> None:
        wait_until(lambda: text in self.text, repr(text))

    def hang_up(self) -> None:
        """Close the terminal, as closing its window does: the kernel sends SIGHUP."""
        self._stop.set()
        self._thread.join()
        os.close(self.master)

    def close(self) -> None:
        if not self._stop.is_set():
            self.hang_up()


def start_in_terminal(*args: str, stderr: int = subprocess.PIPE) -> tuple[subprocess.Popen[str], Screen]:
    """`piton *args` with its terminal on stdin and stdout, and `stderr` on a pipe (to read what it
    says), or on the terminal too (`stderr=subprocess.STDOUT`)."""
    master, slave = terminal()
    env = {**os.environ, "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CONTROLLING, PITON, *args],
        stdin=slave,
        stdout=slave,
        stderr=stderr,
        text=True,
        env=env,
    )
    os.close(slave)
    return proc, Screen(master)


def test_print_mode_whose_terminal_closes_mid_answer(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("first part.", ToolCall("Glob", {"pattern": "*.md"})), stalling())
    proc, screen = start_in_terminal("-p", "look and answer", "--output-format", "stream-json")
    try:
        screen.wait_for('"type": "user"')  # lines are going to the terminal
        fake_api.wait_for_silence()  # the second answer has begun
        screen.hang_up()
        _, err = proc.communicate(timeout=CEILING_S)
    finally:
        screen.close()
    session_id, messages = stopped_session(project, proc.returncode, err, signal.SIGHUP)
    assert [m.role for m in messages] == ["user", "assistant", "user", "user"]
    resumes(fake_api, session_id)


def test_print_mode_all_on_a_terminal_that_closes(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """Its line on stderr has nowhere to go: writing it must not fail the exit."""
    fake_api.add(stalling())
    proc, screen = start_in_terminal("-p", "write a long answer", "--verbose", stderr=subprocess.STDOUT)
    try:
        fake_api.wait_for_silence()
        screen.hang_up()
        proc.wait(timeout=CEILING_S)
    finally:
        screen.close()
    session_id = SessionStore().latest(project)
    assert proc.returncode == 128 + signal.SIGHUP and session_id is not None
    loaded = load_session(SessionStore().project_dir(project) / f"{session_id}.jsonl", session_id)
    assert is_valid(loaded.messages) and loaded.messages[-1].text == INTERRUPTED_REQUEST
    resumes(fake_api, session_id)


def start_repl(fake_api: FakeAnthropicAPI) -> tuple[subprocess.Popen[str], Screen]:
    fake_api.add(stalling())
    proc, screen = start_in_terminal()
    screen.wait_for("❯ ")
    os.write(screen.master, b"write forever\r")
    fake_api.wait_for_silence()
    screen.wait_for("Working")  # the turn is under way, its answer unfinished
    return proc, screen


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGQUIT], ids=["SIGTERM", "SIGQUIT"])
def test_the_repl_stopped_mid_answer(fake_api: FakeAnthropicAPI, project: Path, sig: signal.Signals) -> None:
    proc, screen = start_repl(fake_api)
    try:
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=CEILING_S)
        session_id, messages = stopped_session(project, proc.returncode, err, sig)
        screen.wait_for(f"Resume this session with: piton --resume {session_id}")
    finally:
        screen.close()
    assert [m.text for m in messages] == ["write forever", INTERRUPTED_REQUEST]
    resumes(fake_api, session_id)


def test_the_repl_whose_terminal_closes_mid_answer(fake_api: FakeAnthropicAPI, project: Path) -> None:
    proc, screen = start_repl(fake_api)
    try:
        screen.hang_up()
        _, err = proc.communicate(timeout=CEILING_S)
    finally:
        screen.close()
    session_id, messages = stopped_session(project, proc.returncode, err, signal.SIGHUP)
    assert [m.text for m in messages] == ["write forever", INTERRUPTED_REQUEST]
    resumes(fake_api, session_id)


def test_an_error_no_task_waited_for_is_one_line_and_nothing_after_a_hangup() -> None:
    """The REPL's handler of such errors (prompt_toolkit's own waited for "Press ENTER" forever on a
    terminal that had hung up, spinning on its failed reads)."""
    import asyncio
    import gc

    from piton.cli.signals import Stopper, unexpected_errors

    said: list[str] = []
    stopper = Stopper()

    async def fails() -> None:
        raise OSError(5, "Input/output error")

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(
            unexpected_errors(said.append, lambda: stopper.stopped)
        )
        for _ in range(2):
            task = asyncio.ensure_future(fails())
            await asyncio.sleep(0)
            del task
            gc.collect()  # an unawaited task's error is reported when it is collected
            stopper.signum = signal.SIGHUP

    asyncio.run(scenario())
    assert said == ["piton: OSError: [Errno 5] Input/output error"]
