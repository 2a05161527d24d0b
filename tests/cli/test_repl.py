"""The REPL, driven through prompt_toolkit's pipe input, with the scripted provider and a recording
console. Keys are the bytes a terminal sends: Enter "\\r", Esc "\\x1b", Ctrl-C "\\x03", Ctrl-D "\\x04"."""

from __future__ import annotations

import asyncio
import gc
import io
import re
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from piton.cli.repl import Repl, ReplIO
from piton.core.conversation.history import is_valid
from piton.core.conversation.messages import INTERRUPTED_REQUEST, TextBlock
from piton.core.options import RunOptions
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.fakes.held import HeldProvider
from tests.fakes.tools import Probe
from tests.helpers import CEILING_S

ENTER, ESC, CTRL_C, CTRL_D = "\r", "\x1b", "\x03", "\x04"
PROMPT = "❯ "  # and what was entered at it: the REPL echoes each line so


class Session:
    """A running REPL and the keys to drive it."""

    def __init__(self, repl: Repl, pipe: PipeInput, console: Console) -> None:
        self.repl = repl
        self.pipe = pipe
        self.console = console
        self.sent = 0  # key presses sent so far
        self.pressed = 0  # key presses the prompt has handled so far
        self._counting = False

    def send(self, text: str) -> None:
        self.pipe.send_text(text)

    async def until(self, condition: Callable[[], bool], within: float = CEILING_S) -> None:
        deadline = time.monotonic() + within
        while not condition():
            assert time.monotonic() < deadline, f"timed out; the screen shows:\n{self.screen}"
            await asyncio.sleep(0.02)

    async def type(self, text: str) -> None:
        """Send keys and wait until the prompt has handled each (a lone Esc once it has told it from
        the start of a sequence); a line entered at the prompt, until the REPL has echoed it."""
        await self.until(lambda: self.repl.session is not None)
        assert self.repl.session is not None
        keys = self.repl.session.app.key_processor
        if not self._counting:
            keys.after_key_press += self._pressed
            self._counting = True
        line = self.repl.session.default_buffer.text + text.removesuffix(ENTER)
        echoed = (
            text.endswith(ENTER)
            and line.strip() != ""
            and line.isprintable()  # a single line, as typed
            and self.repl.runtime is not None
            and not self.repl.asking
            # a message typed during the work waits above the prompt, echoed once it goes
            and (not self.repl.busy or line.lstrip().startswith(("/", "#")))
        )
        echoes = self._echoes()
        self.sent += len(key_presses(text))
        self.send(text)
        await self.until(lambda: self.pressed >= self.sent and not keys.key_buffer and not keys.input_queue)
        if echoed:
            await self.until(lambda: self._echoes() > echoes)

    def _pressed(self, _: object) -> None:
        self.pressed += 1

    def _echoes(self) -> int:
        return sum(line.startswith(PROMPT) for line in self.screen.split("\n"))

    async def idle(self) -> None:
        await self.until(lambda: self.repl.idle)

    @property
    def screen(self) -> str:
        return "\n".join(line.rstrip() for line in self.console.export_text(clear=False).split("\n"))

    @property
    def history(self) -> list[Any]:
        assert self.repl.runtime is not None
        return self.repl.runtime.agent.history


def key_presses(text: str) -> list[KeyPress]:
    """The keys `text` is, read as the prompt reads its input (a lone Esc at the end included)."""
    found: list[KeyPress] = []
    parser = Vt100Parser(found.append)
    parser.feed(text)
    parser.flush()
    return found


async def drive(
    project: Path,
    provider: ScriptedProvider,
    script: Callable[[Session], Awaitable[None]],
    *,
    tools: list[Any] | None = None,
    initial_prompt: str | None = None,
    history_file: Path | None = None,
    loaded: bool = True,
    factory: Callable[[], ScriptedProvider] | None = None,
    **options: Any,
) -> Session:
    console = Console(record=True, width=100, color_system=None, file=io.StringIO())
    with create_pipe_input() as pipe:
        repl = Repl(
            RunOptions(cwd=project, **options),
            initial_prompt=initial_prompt,
            provider_factory=factory or (lambda: provider),
            tools=tools if tools is not None else [Probe("Echo", read_only=True), Probe("Shell")],
            io=ReplIO(input=pipe, output=DummyOutput(), console=console, history_file=history_file),
        )
        session = Session(repl, pipe, console)
        task = asyncio.ensure_future(repl.run())
        await session.until(lambda: repl.runtime is not None if loaded else repl.session is not None)
        try:
            await script(session)
        finally:
            if not task.done():
                session.send(CTRL_D)
            code = await asyncio.wait_for(task, 10)
        assert code == 0
    return session


def run(
    project: Path, provider: ScriptedProvider, script: Callable[[Session], Awaitable[None]], **kw: Any
) -> Session:
    return asyncio.run(drive(project, provider, script, **kw))


def test_a_prompt_streams_an_answer_and_ctrl_d_exits(project: Path) -> None:
    async def script(s: Session) -> None:
        await s.type("hello there" + ENTER)
        await s.idle()

    s = run(project, ScriptedProvider(reply("Hi! **How** can I help?")), script)
    assert "❯ hello there" in s.screen and "Hi! How can I help?" in s.screen
    assert [m.role for m in s.history] == ["user", "assistant"]
    assert "Resume this session with: piton --resume" in s.screen


def test_the_initial_prompt_runs_at_once(project: Path) -> None:
    async def script(s: Session) -> None:
        await s.until(lambda: len(s.history) == 2)

    s = run(project, ScriptedProvider(reply("Started.")), script, initial_prompt="begin")
    assert s.history[0].text == "begin" and "Started." in s.screen
    # the message is shown under the first screen, as if typed once it was up
    assert s.screen.index("✻ Piton") < s.screen.index("permission mode") < s.screen.index("❯ begin")


def test_tool_calls_show_a_line_and_a_summary(project: Path) -> None:
    provider = ScriptedProvider(reply("Checking.", ToolCall("Echo", {"text": "README.md"})), reply("Done."))

    async def script(s: Session) -> None:
        await s.type("look" + ENTER)
        await s.idle()

    s = run(project, provider, script)
    assert "● Echo(README.md)\n  ⎿  Echo: README.md" in s.screen
    assert s.screen.index("Checking.") < s.screen.index("● Echo") < s.screen.index("Done.")


@pytest.mark.parametrize(("answer", "allowed"), [("1", True), ("3 use the other tool", False)])
def test_a_call_that_needs_permission_asks_and_the_answer_decides(
    project: Path, answer: str, allowed: bool
) -> None:
    shell = Probe("Shell")
    provider = ScriptedProvider(reply(ToolCall("Shell", {"text": "make deploy"})), reply("ok"))

    async def script(s: Session) -> None:
        await s.type("deploy" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type(answer + ENTER)
        await s.idle()

    s = run(project, provider, script, tools=[shell])
    assert "Waiting for your permission" in s.screen and "Allow? 1 yes" in s.screen
    assert (shell.log == ["start make deploy", "end make deploy"]) is allowed
    [result] = provider.requests[1].messages[-1].tool_results
    if allowed:
        assert result.content == "Shell: make deploy"
    else:
        assert result.is_error and "the user said no: use the other tool" in str(result.content)


def test_allowing_for_the_session_stops_asking(project: Path) -> None:
    calls = [ToolCall("Shell", {"text": "npm test"}), ToolCall("Shell", {"text": "npm test --watch"})]
    provider = ScriptedProvider(reply(calls[0]), reply(calls[1]), reply("ok"))
    shell = Probe("Shell")
    asked: list[int] = []

    async def script(s: Session) -> None:
        await s.type("test" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        asked.append(1)
        await s.type("2" + ENTER)
        await s.idle()

    s = run(project, provider, script, tools=[shell])
    assert len(asked) == 1 and len(shell.log) == 4  # both ran; one question
    assert "is allowed for the rest of this session" in s.screen


def test_esc_interrupts_a_slow_answer_and_the_next_prompt_works(project: Path) -> None:
    provider = HeldProvider(reply("word " * 400, chunk=5), reply("Fresh answer."))

    async def script(s: Session) -> None:
        await s.type("write a lot" + ENTER)
        await s.until(lambda: provider.holding)  # the answer has begun, and goes no further for now
        await s.until(
            lambda: (
                "word word" in s.screen
                or (s.repl.renderer is not None and "word" in str(s.repl.renderer.live()))
            )
        )
        await s.type(ESC)
        await s.idle()
        await s.type("again" + ENTER)
        await s.idle()

    s = run(project, provider, script)
    assert "Interrupted · what should Piton do instead?" in s.screen
    assert "Fresh answer." in s.screen
    assert is_valid(s.history)
    texts = [m.text for m in s.history]
    assert INTERRUPTED_REQUEST in texts and texts[-2:] == ["again", "Fresh answer."]


def test_ctrl_c_interrupts_a_running_tool(project: Path) -> None:
    async def never(_: str) -> str:
        await asyncio.Event().wait()
        return ""

    provider = ScriptedProvider(reply(ToolCall("Slow", {"text": "x"})))

    async def script(s: Session) -> None:
        await s.type("go" + ENTER)
        await s.until(lambda: "● Slow(x)" in s.screen)
        await s.type(CTRL_C)
        await s.idle()

    s = run(project, provider, script, tools=[Probe("Slow", never, read_only=True)])
    assert "Interrupted" in s.screen
    assert is_valid(s.history) and s.history[-2].tool_results[0].is_error


def test_esc_before_the_session_has_loaded_puts_the_message_back(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = ScriptedProvider(reply("Only now."))
    started = asyncio.Event()
    typed = threading.Event()

    def slow_provider() -> ScriptedProvider:
        # loading takes a while (a large project, a slow disk): here, until the keys are in
        assert typed.wait(CEILING_S)
        return provider

    async def script(s: Session) -> None:
        assert s.repl.runtime is None
        await s.type("first" + ENTER)
        await s.type("second" + ENTER)
        await s.type(ESC)
        typed.set()
        await s.until(lambda: s.repl.runtime is not None)
        assert s.repl.session is not None and s.repl.session.default_buffer.text == "first\n\nsecond"
        assert provider.requests == [] and not s.repl.busy
        started.set()
        s.repl.session.default_buffer.text = ""
        await s.type("now" + ENTER)
        await s.idle()

    s = asyncio.run(drive(project, provider, script, loaded=False, factory=slow_provider))
    # before the session loads there is no console yet: lines go to standard output
    assert started.is_set() and "Interrupted before it was sent" in capsys.readouterr().out
    assert [m.text for m in s.history] == ["now", "Only now."]


def test_garbage_is_not_collected_while_the_session_opens_and_is_again_after(project: Path) -> None:
    loading = threading.Event()
    seen: list[bool] = []

    def slow_provider() -> ScriptedProvider:
        seen.append(gc.isenabled())  # while the session opens
        assert loading.wait(CEILING_S)
        return ScriptedProvider(reply("Hi."))

    async def script(s: Session) -> None:
        loading.set()
        await s.until(lambda: s.repl.sessions.started)
        seen.append(gc.isenabled())

    frozen = gc.get_freeze_count()
    try:
        asyncio.run(drive(project, ScriptedProvider(), script, loaded=False, factory=slow_provider))
    finally:
        gc.enable()  # whatever happened, not off for the tests after this one
    # what start-up made is frozen: later full collections leave it out
    assert seen == [False, True] and gc.get_freeze_count() > frozen


def test_ctrl_c_twice_on_an_empty_prompt_exits(project: Path) -> None:
    async def script(s: Session) -> None:
        await s.type(CTRL_C)
        assert not s.repl.exiting
        await s.type(CTRL_C)

    s = run(project, ScriptedProvider(), script)
    assert s.repl.exiting


def live_area(s: Session) -> str:
    return "".join(text for _, text, *_ in s.repl.view.message())


def test_typing_while_the_model_works_queues_the_next_message(project: Path) -> None:
    """A queued message waits above the prompt, out of the answer being written; it reaches the
    scrollback, after the prompt's mark, when it is sent."""
    provider = HeldProvider(reply("slow " * 60, chunk=3), reply("Second answer."))

    async def script(s: Session) -> None:
        await s.type("first" + ENTER)
        await s.until(lambda: provider.holding)
        await s.type("second" + ENTER)
        assert s.repl.queue == ["second"]
        assert "❯ second  (queued: goes when this turn ends)" in live_area(s)
        assert "second" not in s.screen
        provider.release()
        await s.until(lambda: len(s.history) == 4)
        await s.idle()
        assert "queued" not in live_area(s)

    s = run(project, provider, script)
    assert "(queued" not in s.screen
    assert s.screen.index("slow slow") < s.screen.index("❯ second\n") < s.screen.index("Second answer.")
    assert [m.text for m in s.history][2:] == ["second", "Second answer."]


def test_multiline_input(project: Path) -> None:
    provider = ScriptedProvider(reply("ok"))

    async def script(s: Session) -> None:
        await s.type(
            "one\x1b\rtwo\nthree\\" + ENTER + "four" + ENTER
        )  # Alt+Enter, Ctrl-J, trailing backslash
        # the REPL is idle until the last key is read: wait for the turn itself, then for its end
        await s.until(lambda: s.repl.runtime is not None and len(s.history) == 2)
        await s.idle()

    s = run(project, provider, script)
    assert s.history[0].text == "one\ntwo\nthree\nfour"


@pytest.mark.sandbox
def test_bang_says_when_it_starts_where_an_earlier_cd_left_off(project: Path) -> None:
    (project / "src").mkdir()

    async def script(s: Session) -> None:
        await s.type("!pwd" + ENTER)
        await s.until(lambda: s.screen.splitlines()[-1].endswith("project"))
        await s.type("!cd src" + ENTER)
        await s.until(lambda: s.repl.runtime is not None and len(s.history) == 2)
        await s.type("!pwd" + ENTER)
        await s.until(lambda: s.screen.splitlines()[-1].endswith("src"))

    s = run(project, ScriptedProvider(), script)
    assert s.screen.count("(in src, where the last command ended)") == 1


def test_bang_runs_a_shell_command_without_a_model_turn(project: Path) -> None:
    provider = ScriptedProvider(reply("I saw it."))

    async def script(s: Session) -> None:
        await s.type("!echo from-the-shell" + ENTER)
        await s.until(lambda: s.repl.runtime is not None and len(s.history) == 1)  # the note, no turn
        assert provider.requests == []
        assert s.screen.splitlines()[-1] == "from-the-shell"
        await s.type("what did it print?" + ENTER)
        await s.idle()

    run(project, provider, script)
    sent = provider.requests[0].messages
    assert "<bash-input>echo from-the-shell</bash-input>" in sent[0].text
    assert "from-the-shell" in sent[0].text and sent[-1].text == "what did it print?"


def test_a_mention_attaches_the_file_and_says_so(project: Path) -> None:
    (project / "notes.md").write_text("The secret word is banana.\nAnd pear.\n")
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("")
    provider = ScriptedProvider(reply("banana"), reply("a.py"))

    async def script(s: Session) -> None:
        await s.type("what is in @notes.md and @nobody" + ENTER)
        await s.idle()
        await s.type("and in @src?" + ENTER)
        await s.idle()

    s = run(project, provider, script)
    # what was attached is shown under the message, as a Read would be
    shown = s.screen.split("❯ what is in @notes.md and @nobody")[1]
    assert "  ⎿  Read notes.md (2 lines)" in shown and "not attached" not in shown  # @nobody: no file
    assert "  ⎿  Listed src (1 entry)" in s.screen
    content = provider.requests[0].messages[0].content
    assert isinstance(content[0], TextBlock) and isinstance(content[1], TextBlock)
    assert content[0].text == "what is in @notes.md and @nobody"
    assert "The secret word is banana." in content[1].text and len(content) == 2


def test_a_long_paste_stands_as_a_marker_and_is_sent_whole(project: Path) -> None:
    """As in Claude Code: a pasted text of many lines shows as `[Pasted text #1 +N lines]` in the
    prompt and in the scrollback; the model gets the text. A short paste is pasted as it is, and
    the lines of a message after the first are indented under it."""
    log = "".join(f"error line {i}\r\n" for i in range(200))
    provider = ScriptedProvider(reply("Seen."), reply("Fine."))

    async def script(s: Session) -> None:
        await s.type("why does this fail? \x1b[200~" + log + "\x1b[201~")
        assert s.repl.session is not None
        assert s.repl.session.default_buffer.text == "why does this fail? [Pasted text #1 +200 lines]"
        await s.type(ENTER)
        await s.idle()
        await s.type("\x1b[200~one\ntwo\x1b[201~" + ENTER)
        await s.idle()

    s = run(project, provider, script)
    sent = provider.requests[0].messages[0].text
    assert sent == "why does this fail? " + log.replace("\r\n", "\n")
    assert "❯ why does this fail? [Pasted text #1 +200 lines]\n" in s.screen
    assert "error line 5" not in s.screen
    assert "❯ one\n  two\n" in s.screen
    assert provider.requests[1].messages[-1].text == "one\ntwo"


def test_shift_tab_cycles_the_permission_mode(project: Path) -> None:
    seen: list[str] = []

    async def script(s: Session) -> None:
        assert s.repl.runtime is not None and s.repl.runtime.agent.gate is not None
        for _ in range(3):
            await s.type("\x1b[Z")
            seen.append(s.repl.runtime.agent.gate.permissions.mode)

    run(project, ScriptedProvider(), script)
    assert seen == ["acceptEdits", "plan", "default"]


def test_an_empty_session_offers_no_resume(project: Path) -> None:
    s = slash(project, "/help")
    assert "/clear" in s.screen and "Resume this session" not in s.screen


def test_the_mode_outlives_clear(project: Path) -> None:
    async def script(s: Session) -> None:
        assert s.repl.runtime is not None
        first = s.repl.runtime.log.session_id
        await s.type("\x1b[Z")  # acceptEdits
        await s.type("/clear" + ENTER)
        await s.until(lambda: s.repl.runtime is not None and s.repl.runtime.log.session_id != first)

    s = run(project, ScriptedProvider(), script)
    assert s.repl.runtime is not None and s.repl.runtime.agent.gate is not None
    assert s.repl.runtime.agent.gate.permissions.mode == "acceptEdits"


def slash(project: Path, *commands: str, provider: ScriptedProvider | None = None) -> Session:
    async def script(s: Session) -> None:
        for command in commands:
            await s.type(command + ENTER)
            await s.idle()

    return run(project, provider or ScriptedProvider(), script)


def test_help_lists_the_commands_and_keys(project: Path) -> None:
    screen = slash(project, "/help").screen
    for name in (
        "/clear",
        "/compact",
        "/context",
        "/cost",
        "/model",
        "/resume",
        "/permissions",
        "/status",
        "/exit",
    ):
        assert name in screen
    assert "Esc or Ctrl-C interrupts" in screen


def test_model_without_a_name_lists_the_choices(project: Path) -> None:
    screen = slash(project, "/model").screen
    assert "● sonnet  claude-sonnet-5-5" in screen and "opus    claude-opus-5-5" in screen
    assert "haiku" in screen and "/model NAME switches" in screen


def test_an_unknown_command_suggests_close_ones(project: Path) -> None:
    assert "Unknown command /stauts. Did you mean /status" in slash(project, "/stauts").screen


def test_model_cost_status_and_context(project: Path) -> None:
    provider = ScriptedProvider(
        reply("hi", input_tokens=1000, output_tokens=100, cache_read_input_tokens=3000)
    )
    s = slash(project, "hello", "/model opus", "/cost", "/status", "/context", provider=provider)
    assert s.repl.runtime is not None and s.repl.runtime.agent.config.model == "claude-opus-5-5"
    assert "Model: claude-opus-5-5 · window 1,000,000 tokens · thinking adaptive" in s.screen
    assert (
        "claude-sonnet-5-5" in s.screen and "75%" in s.screen
    )  # 3,000 of 4,000 prompt tokens from the cache
    assert "Permission mode: default" in s.screen and "Sandbox: workspace-write via bubblewrap " in s.screen
    assert "system prompt" in s.screen and "tool definitions" in s.screen


def test_clear_and_resume_switch_sessions(project: Path) -> None:
    provider = ScriptedProvider(reply("first answer"), reply("in the new session"))

    async def script(s: Session) -> None:
        await s.type("first question" + ENTER)
        await s.idle()
        assert s.repl.runtime is not None
        first = s.repl.runtime.log.session_id
        await s.type("/clear" + ENTER)
        await s.until(lambda: s.repl.runtime is not None and s.repl.runtime.log.session_id != first)
        assert s.history == []
        await s.type("/resume" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type("1" + ENTER)
        await s.until(lambda: s.repl.runtime is not None and s.repl.runtime.log.session_id == first)
        await s.type("continue" + ENTER)
        await s.idle()

    s = run(project, provider, script)
    assert [m.text for m in provider.requests[1].messages] == ["first question", "first answer", "continue"]
    assert "first question" in s.screen.split("/resume")[-1]  # the picker shows each session's first prompt
    after = s.screen.split("Resume which?")[-1]
    assert after.count("── Resumed session ") == 1 and "(resumed session" not in after  # said once


def test_clear_during_a_turn_lets_the_turn_finish_in_the_old_session(project: Path) -> None:
    from piton.core.conversation.session import load_session

    async def never(_: str) -> str:
        await asyncio.Event().wait()
        return ""

    provider = ScriptedProvider(reply(ToolCall("Slow", {"text": "x"})), reply("fresh"))
    old: list[Any] = []

    async def script(s: Session) -> None:
        assert s.repl.runtime is not None
        old.append(s.repl.runtime.log)
        await s.type("go" + ENTER)
        await s.until(lambda: "● Slow(x)" in s.screen)
        await s.type("/clear" + ENTER)
        await s.until(lambda: s.repl.runtime is not None and s.repl.runtime.log is not old[0])
        await s.idle()
        await s.type("hello" + ENTER)
        await s.idle()

    s = run(project, provider, script, tools=[Probe("Slow", never, read_only=True)])
    log = old[0]
    assert log._file is None, "the old session's log was closed after its turn's last lines, not before"
    texts = [m.text for m in load_session(log.path, log.session_id).messages]
    assert texts[0] == "go" and texts[-1] == INTERRUPTED_REQUEST and is_valid(s.history)
    assert [m.text for m in s.history] == ["hello", "fresh"], (
        "nothing of the old turn reached the new session"
    )


def test_permissions_shows_rules_and_adds_one(project: Path) -> None:
    s = slash(project, "/permissions allow Shell(make:*)", "/permissions")
    assert "Mode: default" in s.screen and "allow: Shell(make:*)" in s.screen


def test_exit_command(project: Path) -> None:
    s = slash(project, "/exit")
    assert s.repl.exiting


def test_no_color_is_respected(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    console = Repl(RunOptions(cwd=project)).open_console()
    assert console.no_color
    console.begin_capture()
    console.print("[red]plain[/red]")
    assert "\x1b[31m" not in console.end_capture()


def test_a_paste_keeps_its_newlines(project: Path) -> None:
    provider = ScriptedProvider(reply("ok"))

    async def script(s: Session) -> None:
        await s.type("\x1b[200~def f():\r    return 1\x1b[201~")  # bracketed paste, as terminals send it
        await s.type(ENTER)
        await s.idle()

    s = run(project, provider, script)
    assert s.history[0].text == "def f():\n    return 1"


def test_the_prompt_history_outlives_the_session(project: Path, tmp_path: Path) -> None:
    history = tmp_path / "repl_history"
    provider = ScriptedProvider(reply("one"), reply("two"))

    async def first(s: Session) -> None:
        await s.type("remember this prompt" + ENTER)
        await s.idle()

    async def second(s: Session) -> None:
        await s.type("\x1b[A")  # Up: the previous session's prompt comes back
        await s.type(ENTER)
        await s.idle()

    run(project, provider, first, history_file=history)
    s = run(project, provider, second, history_file=history)
    assert s.history[-2].text == "remember this prompt"


def test_compact_context_stats_and_the_status_line(project: Path) -> None:
    from piton.cli.status import status_line
    from piton.core.context.compaction import SUMMARY_HEADER
    from piton.core.providers import ModelRequest

    (project / ".piton").mkdir()
    (project / ".piton" / "settings.json").write_text('{"contextWindow": 10000}')

    def summary(request: ModelRequest) -> Any:
        assert "keep the failing tests" in request.messages[0].text
        return reply("## Summary\nLooked at the lexer.", input_tokens=900, output_tokens=100)

    provider = ScriptedProvider(
        reply("Looking.", ToolCall("Echo", {"text": "lexer.py"}), input_tokens=3000, output_tokens=50),
        reply("The lexer is fine.", input_tokens=4000, output_tokens=100),
        summary,
    )
    lines: list[str] = []

    async def script(s: Session) -> None:
        await s.type("look at the lexer" + ENTER)
        await s.until(lambda: len(s.history) == 4)
        await s.idle()
        assert s.repl.runtime is not None
        lines.append(status_line(s.repl.runtime, s.repl.totals))
        for command in ("/context", "/compact keep the failing tests", "/stats"):
            await s.type(command + ENTER)
            await s.idle()

    s = run(project, provider, script)
    assert "context 41%" in lines[0], "4,100 tokens the API counted, of a 10,000-token window"
    assert "Context: 4,100 of 10,000 tokens (41.0%)" in s.screen
    for part in ("system prompt", "tool definitions", "skills listing", "messages", "tool results"):
        assert part in s.screen
    assert "Compaction starts at 7,500 tokens (3,400 from now)." in s.screen
    assert "✻ Compacted the conversation (manual, earlier part summarised): 4,100 →" in s.screen
    assert s.history[0].text.startswith(SUMMARY_HEADER)
    assert "<user-message>\nlook at the lexer\n</user-message>" in s.history[0].text
    assert "Compactions: 1" in s.screen
    assert re.search(r"Echo +1 +\d+ ms +0%", s.screen), "the tool table counts the call"
    # the summary request is paid for too: 3,000 + 4,000 + 900 input tokens
    assert s.repl.totals.by_model["claude-sonnet-5-5"].input_tokens == 7_900
    provider.assert_complete()


def test_after_a_compaction_its_line_the_status_line_and_context_agree(project: Path) -> None:
    from piton.cli.status import status_line

    """Far below the limit the status line may estimate roughly (no tokenizer loaded yet); a
    compaction's figure and /context's are exact, and from then on the status line's too."""
    provider = ScriptedProvider(
        reply("Looking.", ToolCall("Echo", {"text": "lexer.py\u00e9 " * 3000}), input_tokens=3000),
        reply("The lexer is fine.", input_tokens=4000),
        reply("## Summary\nLooked at the lexer, which is fine: " + "checked\u00e9 " * 2000),
    )
    lines: list[str] = []

    async def script(s: Session) -> None:
        await s.type("look at the lexer" + ENTER)
        await s.until(lambda: len(s.history) == 4)
        await s.idle()
        await s.type("/compact" + ENTER)
        await s.idle()
        assert s.repl.runtime is not None
        lines.append(status_line(s.repl.runtime, s.repl.totals))
        await s.type("/context" + ENTER)
        await s.idle()

    s = run(project, provider, script)
    after = int(re.findall(r"summarised\): [\d,]+ → ([\d,]+) tokens", s.screen)[0].replace(",", ""))
    [(used, window)] = re.findall(r"Context: ([\d,]+) of ([\d,]+) tokens", s.screen)
    assert int(used.replace(",", "")) == after
    assert f"context {after / int(window.replace(',', '')):.0%}" in lines[0], (after, lines[0])


def test_skills_run_as_slash_commands_complete_and_are_listed(project: Path) -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from piton.cli.completion import PitonCompleter

    folder = project / ".claude" / "skills" / "greet"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\ndescription: Greets people by name, in their own language, with the honorific they"
        ' prefer and a line about the weather.\nargument-hint: "<name>"\n---\nGREET-BODY: greet $0.\n'
    )
    (project / "AGENTS.md").write_text("Be kind.\n")
    provider = ScriptedProvider(reply("Hello, Ada!"))
    offered: list[str] = []

    async def script(s: Session) -> None:
        await s.idle()
        await s.until(lambda: s.repl.commands is not None)
        found = PitonCompleter(s.repl.command_names, lambda: s.repl.files).get_completions(
            Document("/gr"), CompleteEvent()
        )
        offered.extend(f"{c.text} {c.display_meta_text}" for c in found)
        for line in ("/greet Ada", "/skills", "/memory"):
            await s.type(line + ENTER)
            await s.until(lambda: len(s.history) == 2)
            await s.idle()

    s = run(project, provider, script)
    # a long description is cut at a word, and says so
    assert offered == [
        "/greet Greets people by name, in their own language, with the honorific they prefer…"
        " (skill, project)"
    ]
    typed, loaded = s.history[0].content
    assert typed.text == "/greet Ada" and "GREET-BODY: greet Ada." in loaded.text
    assert "Hello, Ada!" in s.screen
    assert (
        "greet  [project, /greet or model]" in s.screen and "review  [bundled, /review or model]" in s.screen
    )
    assert "Explore  [built-in]" in s.screen
    assert f"{project / 'AGENTS.md'} (project, 9 characters)" in " ".join(s.screen.split())  # may wrap


def test_a_subagents_tool_calls_are_nested_under_its_task_line(project: Path) -> None:
    task = ToolCall("Task", {"description": "find the parser", "prompt": "Find it."})
    provider = ScriptedProvider(
        reply(task),
        reply(ToolCall("Echo", {"text": "parse.py"}), ToolCall("Nope", {"text": "x"})),
        reply("It is in parse.py."),
        reply("The parser is in parse.py."),
    )

    async def script(s: Session) -> None:
        await s.type("where is the parser?" + ENTER)
        await s.until(lambda: len(s.history) == 4)
        await s.idle()

    screen = run(project, provider, script).screen
    start = screen.index("● Task(find the parser)")
    assert screen[start:].split("\n")[1:5] == [
        "  ⎿  Echo(parse.py)",
        "  ⎿  Nope(x)",
        "       ⎿  Unknown tool 'Nope'. Available tools: Echo, Shell.",
        "  ⎿  general-purpose: 2 turns, 2 tool calls, 0s",
    ]


def test_a_skill_typed_during_a_turn_runs_as_a_turn_of_its_own(project: Path) -> None:
    folder = project / ".claude" / "skills" / "greet"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: Greets.\n---\nGREET-BODY $ARGUMENTS\n")
    provider = HeldProvider(reply("slow " * 60, chunk=3), reply("Hello Ada."), reply("You are welcome."))

    async def script(s: Session) -> None:
        await s.type("first" + ENTER)
        await s.until(lambda: provider.holding)
        await s.type("/greet Ada" + ENTER)
        await s.type("thanks" + ENTER)
        provider.release()
        await s.until(lambda: len(s.history) == 6)
        await s.idle()

    s = run(project, provider, script)
    prompts = [m.content for m in s.history[::2]]
    assert [p[0].text for p in prompts] == ["first", "/greet Ada", "thanks"]
    assert "GREET-BODY Ada" in prompts[1][1].text and len(prompts[2]) == 1


def test_help_keeps_argument_hints_and_the_first_message_is_shown(project: Path) -> None:
    screen = slash(project, "/help").screen
    assert "/compact [instructions]" in screen and "/model [id]" in screen

    async def script(s: Session) -> None:
        await s.until(lambda: len(s.history) == 2)

    s = run(project, ScriptedProvider(reply("Started.")), script, initial_prompt="begin here")
    assert s.screen.index("❯ begin here") < s.screen.index("Started.")


def test_the_status_line_keeps_context_and_cost_when_narrow(project: Path) -> None:
    from piton.cli.status import status_line

    async def script(s: Session) -> None:
        await s.type("hello" + ENTER)
        await s.until(lambda: len(s.history) == 2)
        await s.idle()
        assert s.repl.runtime is not None
        for width in (200, 60, 40):
            line = status_line(s.repl.runtime, s.repl.totals, 0, width)
            assert len(line) < width and "context" in line and "$" in line, (width, line)

    run(project, ScriptedProvider(reply("Hi.")), script)


def test_cost_after_clear_is_the_new_sessions(project: Path) -> None:
    async def script(s: Session) -> None:
        await s.type("hello" + ENTER)
        await s.idle()
        assert s.repl.totals.by_model
        await s.type("/clear" + ENTER)
        await s.until(lambda: "(a new session" in s.screen)
        await s.type("/cost" + ENTER)
        await s.idle()

    s = run(project, ScriptedProvider(reply("Hi.")), script)
    assert "No requests yet in this session." in s.screen.split("/cost")[-1]


def test_a_welcome_on_start_and_a_recap_on_resume(project: Path) -> None:
    provider = ScriptedProvider(reply("The answer is **42**."), reply("Again."))
    ids: list[str] = []

    async def first(s: Session) -> None:
        await s.type("what is the answer?" + ENTER)
        await s.until(lambda: len(s.history) == 2)
        await s.idle()
        assert s.repl.runtime is not None
        ids.append(s.repl.runtime.log.session_id)

    s = run(project, provider, first)
    assert (
        "✻ Piton" in s.screen and "/help for commands" in s.screen and "sandbox workspace-write" in s.screen
    )
    s = run(project, provider, lambda s: s.until(lambda: "Resumed" in s.screen), resume=ids[0])
    recap = s.screen.split(f"Resumed session {ids[0]}: 2 messages")[1]
    assert "❯ what is the answer?" in recap and "⎿  The answer is **42**." in recap


def test_resume_without_an_id_opens_the_picker(project: Path) -> None:
    provider = ScriptedProvider(reply("first answer"))

    async def earlier(s: Session) -> None:
        await s.type("an earlier session" + ENTER)
        await s.until(lambda: len(s.history) == 2)
        await s.idle()

    async def picker(s: Session) -> None:
        await s.until(lambda: s.repl.question is not None)
        assert "Resume which?" in s.repl.question.text  # type: ignore[union-attr]
        await s.type(ENTER)
        await s.idle()

    run(project, provider, earlier)
    s = run(project, provider, picker, initial_prompt="/resume")  # what `piton -r` alone starts with
    assert "an earlier session" in s.screen and provider.requests[1:] == []


def test_doctor_and_config_work_in_the_repl(project: Path) -> None:
    """/doctor checks the setup as `piton doctor` does; /config lists, sets and reads the settings as
    `piton config` does (a change applies from the next session)."""
    s = slash(
        project, "/doctor", "/config set model claude-opus-5-5", "/config get model", "/config nonsense"
    )
    assert "sandbox:" in s.screen and "Did you mean" not in s.screen
    assert "Saved; it applies from the next session." in s.screen
    assert "claude-opus-5-5" in s.screen and "invalid choice: 'nonsense'" in s.screen
    assert "claude-opus-5-5" in (project / ".piton" / "settings.local.json").read_text()


def test_the_prompt_needs_no_session_module_loaded_first(tmp_path: Path) -> None:
    """The REPL draws its prompt once prompt_toolkit is loaded; pydantic and the session's modules
    load beside the prompt, on the session's thread. Finding the prompt's history file, before the
    prompt is drawn, loads none of them (it held the prompt back by about 80 ms)."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from piton.cli.repl import run_repl\n"
        "from piton.cli.repl_view import history_path\n"
        "print(history_path())\n"
        "print(sorted(m for m in sys.modules if m == 'pydantic' or m.startswith('piton.core.conversation.s')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    path, loaded = done.stdout.splitlines()
    assert path == str(tmp_path / "piton" / "repl_history")
    assert loaded == "['piton.core.conversation.state_dir']"
