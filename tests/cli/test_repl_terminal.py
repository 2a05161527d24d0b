"""The REPL in a real pseudo-terminal: the installed `piton`, the real SDK, the fake API over HTTP."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pexpect

from piton.testing.script import ToolCall, reply
from tests.cli.terminal import PITON, PROMPT, Terminal, answering, expect_text, spawn
from tests.fakes.fake_api import FakeAnthropicAPI, Stall
from tests.helpers import CEILING_S


def test_type_stream_run_a_tool_interrupt_and_exit(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / "main.py").write_text("print('hello')\n")
    fake_api.add(
        reply("Let me read it.", ToolCall("Read", {"file_path": "main.py"})),
        reply("It prints **hello**."),
        reply("slow " * 2000, chunk=4, delay_s=0.01),
        reply("Back again."),
    )
    child = spawn(project)
    child.send("what does main.py do?\r")
    child.expect_exact("Read(main.py)")
    expect_text(child, "It prints hello.")
    child.expect_exact(PROMPT)

    child.send("write forever\r")
    child.expect_exact("slow slow")  # streaming
    child.send("\x1b")  # Esc
    child.expect_exact("Interrupted")
    child.send("hello again\r")
    expect_text(child, "Back again.")

    child.send("\x04")  # Ctrl-D
    child.expect_exact("Resume this session with: piton --resume")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert fake_api.rejections == []
    last = fake_api.bodies[-1]["messages"]
    assert last[-1]["content"][-1]["text"] == "hello again"  # the interrupted turn left a valid history


def test_without_a_terminal_the_repl_points_to_print_mode(project: Path) -> None:
    child = pexpect.spawn("/bin/sh", ["-c", f"{PITON} < /dev/null"], cwd=str(project), encoding="utf-8")
    child.expect(pexpect.EOF)
    child.close()
    assert "needs a terminal" in (child.before or "") and child.exitstatus == 2


def test_a_session_that_cannot_open_is_one_line_and_exit_1(project: Path) -> None:
    env = {**os.environ, "TERM": "xterm-256color"}
    child = pexpect.spawn(
        PITON, ["--resume", "no-such-session"], cwd=str(project), env=env, encoding="utf-8", timeout=CEILING_S
    )
    answering(child)
    child.expect(pexpect.EOF)
    child.close()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before or "")
    assert child.exitstatus == 1, screen
    assert screen.count("no-such-session") == 1, screen
    assert "Traceback" not in screen and "never retrieved" not in screen


def test_missing_credentials_are_said_on_the_first_screen(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(TERM="xterm-256color", ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    child = pexpect.spawn(
        PITON, cwd=str(project), env=env, encoding="utf-8", timeout=CEILING_S, dimensions=(40, 100)
    )
    terminal = answering(child, 40, 100)
    # before anything was typed (said above the prompt, or drawn before it: either may come first)
    terminal.pump(lambda: terminal.shows("ANTHROPIC_API_KEY") and terminal.shows(PROMPT.rstrip()), "note")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()


def test_esc_stops_a_shell_command_and_a_permission_question_takes_only_answers(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Creating it.", ToolCall("Bash", {"command": "touch made-by-the-model"})))
    child = spawn(project)
    child.send("!sleep 3600\r")  # only Esc ends it
    expect_text(child, "Running !sleep 3600")
    child.send("\x1b")
    child.expect_exact("Interrupted; the command and what it started were stopped")
    child.expect_exact(PROMPT)

    child.send("make the file\r")
    child.expect_exact("Allow? 1 yes")
    # on the screen, not in what is still to be read: the spinner may have been drawn before the question
    screen = child.logfile_read
    assert isinstance(screen, Terminal)
    screen.pump(lambda: any("Waiting for your permission" in row for row in screen.rows()), "the spinner")
    child.send("!ls\r")
    expect_text(child, "Answer 1, 2 or 3")
    child.send("\x1b")
    child.expect_exact("Interrupted")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert not (project / "made-by-the-model").exists()
    assert len(fake_api.bodies) == 1  # Esc at the question stopped the turn: nothing more was asked


def test_a_long_paragraph_wraps_while_it_streams(fake_api: FakeAnthropicAPI, project: Path) -> None:
    words = " ".join(f"w{i}" for i in range(200))  # about 800 columns: eight rows at 100
    fake_api.add(Stall(reply(words + " END", chunk=40), after=20, seconds=CEILING_S))
    child = spawn(project)
    child.send("talk\r")
    child.expect_exact("w150 ")  # far past the first row, while the stream is still open
    child.send("\x1b")
    child.expect_exact("Interrupted")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert " END" not in (child.before or "")


def test_shift_tab_into_plan_mode_and_approve_the_plan(fake_api: FakeAnthropicAPI, project: Path) -> None:
    plan = "1. Write **out.txt**\n2. Check it"
    fake_api.add(
        reply(ToolCall("ExitPlanMode", {"plan": plan})),
        reply(ToolCall("Write", {"file_path": str(project / "out.txt"), "content": "ok\n"})),
        reply("Written as planned."),
    )
    child = spawn(project)
    child.send("/status\r")  # the session is up (the status line needs a terminal that reports its cursor)
    expect_text(child, "Permission mode: default")
    child.send("\x1b[Z\x1b[Z")  # Shift+Tab twice: acceptEdits, then plan
    child.send("/status\r")
    expect_text(child, "Permission mode: plan")
    child.send("plan the work\r")
    expect_text(child, "Here is the plan:")
    expect_text(child, "Write out.txt")
    expect_text(child, "Go ahead?")
    child.send("1\r")
    expect_text(child, "Written as planned.")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert (project / "out.txt").read_text() == "ok\n"
    assert "Plan mode is active" in str(fake_api.bodies[0]["messages"][0]["content"])


def test_ctrl_o_at_the_prompt_opens_the_whole_transcript(fake_api: FakeAnthropicAPI, project: Path) -> None:
    from piton.testing.script import Thinking

    lines = [f"output line {n}" for n in range(30)]
    (project / "long.txt").write_text("\n".join(lines) + "\n")
    thought = (
        " ".join(f"step{n}" for n in range(12)) + "\nfirst reason\nsecond reason\nthird reason\nlast reason"
    )
    fake_api.add(
        reply(Thinking(thought), ToolCall("Bash", {"command": "cat long.txt"})),
        reply("All read."),
        reply("Back at the prompt."),
    )
    child = spawn(project)
    child.send("/permissions allow Bash\r")
    child.send("read it\r")
    expect_text(child, "All read.")
    child.expect_exact(PROMPT)
    child.send("\x0f")  # Ctrl-O
    child.expect_exact("output line 29")  # it opens at the end: a result the screen showed cut
    child.send("g")  # to the top (less may draw it bottom-up, so one thing is looked for)
    child.expect_exact("step0 step1")  # thinking that collapsed on the screen
    child.send("q")
    child.send("after\r")
    expect_text(child, "Back at the prompt.")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_message_typed_before_the_prompt_is_drawn_is_sent(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Typed ahead and answered."))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40"}
    child = pexpect.spawn(
        PITON, cwd=str(project), env=env, encoding="utf-8", timeout=CEILING_S, dimensions=(40, 100)
    )
    answering(child, 40, 100)
    child.send("quick question\r")  # at once: the prompt is not drawn yet
    expect_text(child, "Typed ahead and answered.")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert fake_api.bodies[0]["messages"][0]["content"][0]["text"] == "quick question"


def test_output_style_picked_in_the_terminal_applies_to_the_next_message(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Insightful answer."))
    child = spawn(project)
    child.send("/output-style\r")
    expect_text(child, "2. Explanatory")
    expect_text(child, "Output style?")
    child.send("2\r")
    expect_text(child, "Output style: Explanatory")
    child.send("explain it\r")
    expect_text(child, "Insightful answer.")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    system = fake_api.bodies[0]["system"]
    assert "# Output style: Explanatory" in (system if isinstance(system, str) else str(system))
    assert '"outputStyle": "Explanatory"' in (project / ".piton/settings.local.json").read_text()


def test_ctrl_v_pastes_the_clipboards_image_into_the_message(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    import base64

    from tests.fakes.images import png

    image = tmp_path / "clip.png"
    image.write_bytes(png())
    tools = tmp_path / "bin"
    tools.mkdir()
    state = tmp_path / "clipboard-state"  # what the clipboard holds: an image, then text
    state.write_text("image/png")
    xclip = tools / "xclip"  # the user's own clipboard program, answering as xclip does
    xclip.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *TARGETS*) echo TARGETS; cat "{state}"; echo ;; *image/png*) cat "{image}" ;; esac\n'
    )
    xclip.chmod(0o755)
    fake_api.add(reply("A red square."))
    child = spawn(project, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}", DISPLAY=":0")
    child.send("what is")
    child.send("\x16")  # Ctrl-V
    expect_text(child, "[Image #1]")
    child.send("?\r")
    expect_text(child, "A red square.")
    state.write_text("UTF8_STRING")
    child.send("\x16")
    expect_text(child, "Ctrl-V: no image on the clipboard")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    content = fake_api.bodies[0]["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "what is [Image #1] ?"}
    assert content[1]["text"] == "(Image #1, pasted:)"
    assert content[2]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(png()).decode(),
    }


def test_the_model_asks_a_question_and_the_answer_goes_back(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    question = {
        "question": "Which database?",
        "header": "Database",
        "options": [
            {"label": "PostgreSQL", "description": "a server"},
            {"label": "SQLite", "description": "a file"},
        ],
        "multiSelect": False,
    }
    fake_api.add(reply(ToolCall("AskUserQuestion", {"questions": [question]})), reply("SQLite it is."))
    child = spawn(project)
    child.send("set it up\r")
    expect_text(child, "[Database] Which database?")
    expect_text(child, "2. SQLite — a file")
    expect_text(child, "Your answer")
    child.send("2\r")
    expect_text(child, "SQLite it is.")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    result = fake_api.bodies[1]["messages"][-1]["content"][0]
    assert '"Which database?"="SQLite"' in str(result["content"])


def user_editor(tmp_path: Path, script: str) -> Path:
    """The user's own `$EDITOR`, outside the project: a shell script given the file as `$1`."""
    editor = tmp_path / "bin" / "fake-editor"
    editor.parent.mkdir()
    editor.write_text(f"#!/bin/sh\n{script}\n")
    editor.chmod(0o755)
    return editor


def test_memory_edit_opens_a_note_in_the_users_editor(project: Path, tmp_path: Path) -> None:
    from piton.core.conversation.session import project_key, state_dir

    editor = user_editor(tmp_path, 'printf "use tabs\\n" >> "$1"')
    child = spawn(project, EDITOR=str(editor))
    child.send("/memory edit prefs.md\r")
    expect_text(child, "Edited")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    note = Path(os.path.realpath(state_dir())) / "memories" / project_key(project) / "prefs.md"
    assert note.read_text() == "use tabs\n"


def test_memory_edit_agents_md_opens_the_projects_own_and_says_when_nothing_changed(
    project: Path, tmp_path: Path
) -> None:
    (project / "AGENTS.md").write_text("# Rules\n")
    editor = user_editor(tmp_path, '[ -e "$1.keep" ] || printf -- "- use tabs\\n" >> "$1"')
    child = spawn(project, EDITOR=str(editor))
    child.send("/memory edit AGENTS.md\r")
    expect_text(child, "Edited")  # not its path: a long one is wrapped onto the next line
    (project / "AGENTS.md.keep").write_text("")  # the editor now leaves the file as it is
    child.send("/memory edit AGENTS.md\r")
    expect_text(child, "Nothing changed in")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert (project / "AGENTS.md").read_text() == "# Rules\n- use tabs\n"


def test_where_no_sandbox_may_start_the_first_screen_says_so_and_no_command_is_put_to_the_user(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    """Every bubblewrap Piton may run (the system's under /usr, the bundled one in this environment)
    lies in a folder the session can write once both are added: the first screen says Bash cannot
    run, and the model's command fails at once rather than after the user approved it."""
    fake_api.add(reply("Running it.", ToolCall("Bash", {"command": "echo hi"})), reply("It could not run."))
    child = spawn(project, "--add-dir", "/usr", "--add-dir", sys.prefix)
    screen = child.logfile_read
    assert isinstance(screen, Terminal)  # the first screen may be drawn before the prompt or after it
    screen.pump(lambda: any("Bash cannot run here" in row for row in screen.rows()), "the line on Bash")
    child.send("run echo hi\r")
    screen.pump(lambda: any("It could not run." in row for row in screen.rows()), "the final answer")
    assert not any("Allow?" in row for row in screen.rows())
    child.send("\x04")
    child.expect(pexpect.EOF)
    result = fake_api.bodies[-1]["messages"][-1]["content"][0]
    assert result["is_error"] and "Bash is unavailable" in str(result["content"])


def test_at_completes_the_projects_files_listed_after_the_prompt(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "wombat_module.py").write_text("x = 1\n")
    child = spawn(project)
    terminal = answering(child, 40, 100)
    child.send("@wombat")

    def completed() -> bool:
        if terminal.shows("src/wombat_module.py"):
            return True
        child.send("\t")  # the listing comes once the prompt is ready: ask for completions again
        return False

    terminal.pump(completed, "@ completion")
    child.send("\x15\x04")  # clear the line, leave
    child.expect(pexpect.EOF)
    child.close()
