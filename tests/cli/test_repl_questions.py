"""Questions in place of the prompt, and work that is not the model's: a permission question takes only
answers and Esc stops its turn; `!cmd` is work that Esc stops."""

from __future__ import annotations

import time
from pathlib import Path

from piton.core.conversation.history import is_valid
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, ESC, Session, run
from tests.fakes.tools import Probe


def test_a_line_that_is_not_an_answer_stays_in_the_input_and_the_question_stays_up(
    project: Path, tmp_path: Path
) -> None:
    shell = Probe("Shell")
    provider = ScriptedProvider(reply(ToolCall("Shell", {"text": "make deploy"})), reply("ok"))
    history = tmp_path / "history"
    waiting: list[str] = []

    async def script(s: Session) -> None:
        await s.type("deploy" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        assert s.repl.renderer is not None
        waiting.append("".join(text for _, text in s.repl.renderer.live()))
        await s.type("!ls" + ENTER)
        await s.until(lambda: "Answer 1, 2 or 3" in s.screen)
        assert s.repl.question is not None and shell.log == []
        assert s.repl.session is not None and s.repl.session.default_buffer.text == "!ls"
        s.repl.session.default_buffer.text = ""
        await s.type("1" + ENTER)
        await s.idle()

    s = run(project, provider, script, tools=[shell], history_file=history)
    assert "Waiting for your permission" in waiting[0] and "Running Shell" not in waiting[0]
    assert shell.log == ["start make deploy", "end make deploy"]
    [result] = provider.requests[1].messages[-1].tool_results
    assert not result.is_error and "said no" not in str(result.content)
    assert "!ls" not in s.history[0].text
    entries = [line for line in history.read_text().splitlines() if line.startswith("+")]
    assert entries == ["+deploy"]  # the answer and the line that was not one stay out of the history


def test_esc_at_a_permission_question_stops_the_turn(project: Path) -> None:
    shell = Probe("Shell")
    provider = ScriptedProvider(reply(ToolCall("Shell", {"text": "rm -rf build"})), reply("next"))

    async def script(s: Session) -> None:
        await s.type("clean" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type(ESC)
        await s.idle()
        assert s.repl.question is None and len(provider.requests) == 1  # no request after the Esc
        await s.type("something else" + ENTER)
        await s.idle()

    s = run(project, provider, script, tools=[shell])
    assert shell.log == [] and "Interrupted" in s.screen
    assert is_valid(s.history)
    [result] = [r for m in provider.requests[1].messages for r in m.tool_results]
    assert result.is_error and "Interrupted by the user" in str(result.content)
    assert provider.requests[1].messages[-1].text == "something else"


def test_a_question_outside_a_turn_is_answered_no_by_esc(project: Path) -> None:
    provider = ScriptedProvider(reply("first answer"))

    async def earlier(s: Session) -> None:
        await s.type("an earlier session" + ENTER)
        await s.idle()

    async def script(s: Session) -> None:
        assert s.repl.runtime is not None
        session_id = s.repl.runtime.log.session_id
        await s.type("/resume" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type(ESC)
        await s.idle()
        assert s.repl.question is None and s.repl.runtime.log.session_id == session_id

    run(project, provider, earlier)
    s = run(project, provider, script)
    assert "Resume which? (number, or Enter to cancel) › no" in s.screen


def test_esc_stops_a_shell_command_and_what_it_started(project: Path) -> None:
    marker = project / "still-running"
    provider = ScriptedProvider(reply("noted"))
    spinner: list[str] = []

    async def script(s: Session) -> None:
        # what is not stopped runs for an hour: far beyond the test's ceiling
        await s.type(f"!sleep 0.5; sleep 3600; touch {marker.name}" + ENTER)
        await s.until(lambda: s.repl.busy)
        await s.type("queued message" + ENTER)
        assert s.repl.renderer is not None
        spinner.append("".join(text for _, text in s.repl.renderer.live()))
        await s.type(ESC)
        await s.until(lambda: not s.repl.busy)
        await s.until(
            lambda: s.repl.session is not None and "queued message" in s.repl.session.default_buffer.text
        )
        s.repl.session.default_buffer.text = ""  # type: ignore[union-attr]
        await s.type("what happened?" + ENTER)
        await s.idle()

    s = run(project, provider, script)
    assert "Running !sleep 0.5; sleep 3600" in spinner[0] and "esc to interrupt" in spinner[0]
    assert "Interrupted; the command and what it started were stopped" in s.screen
    assert "stopped it" in provider.requests[0].messages[0].text
    time.sleep(0.3)
    assert not marker.exists()


def test_an_allowed_edit_shows_its_diff_once(project: Path) -> None:
    from piton.runtime import default_tools

    target = project / "notes.txt"
    provider = ScriptedProvider(
        reply(ToolCall("Write", {"file_path": str(target), "content": "a distinctive new line\n"})),
        reply("Written."),
    )

    async def script(s: Session) -> None:
        await s.type("write it" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type("1" + ENTER)
        await s.idle()

    s = run(project, provider, script, tools=default_tools())
    assert target.read_text() == "a distinctive new line\n"
    assert s.screen.count("+a distinctive new line") == 1


def test_mention_completion_sees_new_files_and_folders_and_a_folder_attaches_its_listing(
    project: Path,
) -> None:
    (project / "src").mkdir()
    (project / "src" / "old.py").write_text("x = 1\n")
    provider = ScriptedProvider(reply("Seen."))

    async def script(s: Session) -> None:
        await s.type("!touch src/fresh.py" + ENTER)
        await s.until(lambda: "src/fresh.py" in s.repl.files)
        assert "src/" in s.repl.files and "src/old.py" in s.repl.files
        await s.idle()
        await s.type("look at @src/" + ENTER)
        await s.idle()

    run(project, provider, script)
    sent = provider.requests[0].messages[-1].content
    listing = [b.text for b in sent if hasattr(b, "text") and "The folder" in b.text]
    assert listing and "fresh.py" in listing[0] and "old.py" in listing[0]
