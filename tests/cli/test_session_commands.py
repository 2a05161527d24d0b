"""/add-dir, /export, /vim and `# note` in the REPL, with the real tools on real files."""

from __future__ import annotations

from pathlib import Path

from prompt_toolkit.enums import EditingMode

from piton.runtime import default_tools
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, ESC, Session, run


def test_add_dir_lets_the_tools_write_there_and_keeps_the_session(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    target = other / "x.txt"
    provider = ScriptedProvider(
        reply(ToolCall("Write", {"file_path": str(target), "content": "early\n"})),
        reply("Could not."),
        reply(ToolCall("Write", {"file_path": str(target), "content": "late\n"})),
        reply("Written."),
    )

    async def script(s: Session) -> None:
        await s.type("write there" + ENTER)
        await s.until(lambda: "Could not." in s.screen)
        assert s.repl.runtime is not None and s.repl.runtime.agent.gate is not None
        s.repl.runtime.agent.gate.allow_for_session("Bash(make test:*)")  # must survive the reopening
        session = s.repl.runtime.log.session_id
        await s.type(f"/add-dir {other}" + ENTER)
        await s.until(lambda: f"Added {other}" in s.screen)
        assert s.repl.runtime is not None and s.repl.runtime.log.session_id == session
        assert s.repl.runtime.agent.gate is not None
        assert s.repl.runtime.agent.gate.permissions.mode == "acceptEdits"
        assert "Bash(make test:*)" in [str(r) for r in s.repl.runtime.agent.gate.permissions.allow]
        await s.type("now write there" + ENTER)
        await s.until(lambda: "Written." in s.screen)

    s = run(project, provider, script, tools=default_tools(), permission_mode="acceptEdits")
    [refused] = provider.requests[1].messages[-1].tool_results
    assert refused.is_error
    assert target.read_text() == "late\n"
    assert s.history[0].text == "write there"  # the same conversation goes on
    assert "added a working folder" in " ".join(m.text for m in provider.requests[2].messages)
    assert "Resumed" not in s.screen  # reopening is not a resume to recap


def test_add_dir_of_a_missing_folder_is_one_line(project: Path) -> None:
    async def script(s: Session) -> None:
        await s.type("/add-dir nowhere" + ENTER)
        await s.until(lambda: "not a folder" in " ".join(s.screen.split()))  # however it wraps

    run(project, ScriptedProvider(), script)


def test_export_writes_the_conversation_as_markdown(project: Path) -> None:
    (project / "main.py").write_text("print('hi')\n")
    provider = ScriptedProvider(
        reply("Let me look.", ToolCall("Read", {"file_path": str(project / "main.py")})),
        reply("It prints ```hi```."),
    )

    async def script(s: Session) -> None:
        await s.type("what does main.py do?" + ENTER)
        await s.until(lambda: "It prints" in s.screen)
        await s.type("/export notes/out.md" + ENTER)
        await s.until(lambda: "Exported" in s.screen or "cannot write" in s.screen)
        (project / "notes").mkdir()
        await s.type("/export notes/out.md" + ENTER)
        await s.until(lambda: "Exported 4 messages" in s.screen)

    s = run(project, provider, script, tools=default_tools())
    assert "/export: cannot write" in s.screen  # no such folder: said, nothing lost
    text = (project / "notes" / "out.md").read_text()
    assert text.startswith("# Piton session ")
    you, answer, call = (
        text.index("## You\n\nwhat does main.py do?"),
        text.index("## Piton\n\nLet me look."),
        text.index("**Read(main.py)**"),
    )
    assert you < answer < call < text.index("print('hi')") < text.index("It prints ```hi```.")


def test_export_does_not_follow_a_symlink_put_in_its_place(project: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    (project / "out.md").symlink_to(victim)

    async def script(s: Session) -> None:
        await s.type("hello" + ENTER)
        await s.until(lambda: "Hi." in s.screen)
        await s.type("/export out.md" + ENTER)
        await s.until(lambda: "cannot write" in s.screen)

    run(project, ScriptedProvider(reply("Hi.")), script)
    assert victim.read_text() == "keep\n"


def toolbar(s: Session) -> str:
    return "".join(text for _, text, *_ in s.repl.view.toolbar())


def test_vim_switches_the_prompt_to_vi_keys_and_back(project: Path) -> None:
    modes: list[EditingMode] = []

    async def script(s: Session) -> None:
        assert s.repl.session is not None
        await s.type("/vim" + ENTER)
        await s.until(lambda: "Vi keys are on" in s.screen)
        modes.append(s.repl.session.app.editing_mode)
        assert toolbar(s).startswith(" -- INSERT -- ")  # the mode is shown, as vim shows it
        await s.type("hello" + ESC)  # typed in insert mode, then Esc: vi's, not /rewind
        assert toolbar(s).startswith(" -- NORMAL -- ")
        await s.type("0x" + ENTER)  # normal mode: delete the first character, then send
        await s.until(lambda: "Hi." in s.screen)
        await s.type("/vim" + ENTER)
        await s.until(lambda: "Vi keys are off" in s.screen)
        modes.append(s.repl.session.app.editing_mode)
        assert "--" not in toolbar(s)

    provider = ScriptedProvider(reply("Hi."))
    s = run(project, provider, script)
    assert modes == [EditingMode.VI, EditingMode.EMACS]
    assert s.history[0].text == "ello"
    assert s.repl.question is None


def test_a_hash_line_appends_to_the_memory_file_chosen(project: Path) -> None:
    (project / "AGENTS.md").write_text("# Rules\n- be brief")  # no newline at the end
    provider = ScriptedProvider(reply("Noted."))

    async def script(s: Session) -> None:
        await s.type("# run the tests with -x" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type("1" + ENTER)
        await s.until(lambda: "Saved to" in s.screen)
        await s.type("# mine only" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type("2" + ENTER)
        await s.until(lambda: s.screen.count("Saved to") == 2)
        await s.type("# not this one" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type(ESC)
        await s.until(lambda: "Not saved." in s.screen)
        await s.type("go on" + ENTER)
        await s.until(lambda: "Noted." in s.screen)

    run(project, provider, script)
    assert (project / "AGENTS.md").read_text() == "# Rules\n- be brief\n- run the tests with -x\n"
    assert (Path.home() / ".piton" / "AGENTS.md").read_text() == "- mine only\n"
    sent = " ".join(m.text for m in provider.requests[0].messages)
    assert "run the tests with -x" in sent and "mine only" in sent and "not this one" not in sent
    assert len(provider.requests) == 1  # a note is not a turn
