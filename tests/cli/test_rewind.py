"""Checkpoints and /rewind in the REPL: the real Read, Edit and Write tools on real files, the scripted
model, and the session's checkpoints on disk."""

from __future__ import annotations

from pathlib import Path

from piton.core.conversation.history import is_valid
from piton.runtime import default_tools
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, ESC, Session, run


def two_turns(project: Path) -> ScriptedProvider:
    """Turn 1 edits a.txt (one -> two); turn 2 creates b.txt and edits a.txt again (two -> three)."""
    (project / "a.txt").write_text("one\n")
    a = str(project / "a.txt")
    return ScriptedProvider(
        reply(
            ToolCall("Read", {"file_path": a}),
            ToolCall("Edit", {"file_path": a, "old_string": "one", "new_string": "two"}),
        ),
        reply("Edited."),
        reply(
            ToolCall("Write", {"file_path": str(project / "b.txt"), "content": "new\n"}),
            ToolCall("Edit", {"file_path": a, "old_string": "two", "new_string": "three"}),
        ),
        reply("Done."),
        reply("Again."),
    )


async def rewind(s: Session, number: str, choice: str, *, esc_esc: bool = False) -> None:
    if esc_esc:
        await s.type(ESC)
        await s.type(ESC)
    else:
        await s.type("/rewind" + ENTER)
    await s.until(lambda: s.repl.question is not None and "which message" in s.repl.question.text)
    await s.type(number + ENTER)
    await s.until(lambda: s.repl.question is not None and "Restore" in s.repl.question.text)
    await s.type(choice + ENTER)


def test_rewind_restores_code_then_code_and_conversation(project: Path) -> None:
    provider = two_turns(project)
    edited: list[str] = []

    async def script(s: Session) -> None:
        await s.type("edit a" + ENTER)
        await s.idle()
        await s.type("make b" + ENTER)
        await s.idle()
        assert (project / "a.txt").read_text() == "three\n" and (project / "b.txt").exists()
        await rewind(s, "2", "3")  # code only, to before "make b"
        await s.idle()
        assert (project / "a.txt").read_text() == "two\n" and not (project / "b.txt").exists()
        assert len(s.history) == 8
        await rewind(s, "1", "1", esc_esc=True)  # code and conversation, to before "edit a"
        await s.idle()
        assert s.repl.session is not None
        edited.append(s.repl.session.default_buffer.text)
        s.repl.session.default_buffer.text = ""

    s = run(project, provider, script, tools=default_tools(), permission_mode="acceptEdits")
    assert (project / "a.txt").read_text() == "one\n" and not (project / "b.txt").exists()
    assert s.history == [] and edited == ["edit a"]
    assert "restored" in s.screen and "Files changed by shell commands are not restored" in s.screen


def test_a_file_changed_outside_piton_is_not_overwritten_without_asking(project: Path) -> None:
    provider = two_turns(project)

    async def script(s: Session) -> None:
        await s.type("edit a" + ENTER)
        await s.idle()
        (project / "a.txt").write_text("mine\n")  # the user's own change, after Piton's
        await rewind(s, "1", "3")
        await s.until(lambda: s.repl.question is not None and "Overwrite" in s.repl.question.text)
        await s.type("n" + ENTER)
        await s.idle()

    s = run(project, provider, script, tools=default_tools(), permission_mode="acceptEdits")
    assert (project / "a.txt").read_text() == "mine\n"
    assert "changed outside Piton since; left as it is" in " ".join(s.screen.split())


def test_conversation_only_keeps_the_files_and_the_history_stays_valid_after_resume(project: Path) -> None:
    provider = two_turns(project)
    ids: list[str] = []

    async def first(s: Session) -> None:
        await s.type("edit a" + ENTER)
        await s.idle()
        await s.type("make b" + ENTER)
        await s.idle()
        assert s.repl.runtime is not None
        ids.append(s.repl.runtime.log.session_id)

    async def resumed(s: Session) -> None:
        assert len(s.history) == 8  # the checkpoints came back with the session
        await rewind(s, "2", "2")  # conversation only
        await s.idle()
        assert s.repl.session is not None and s.repl.session.default_buffer.text == "make b"
        await s.type(ENTER)  # sent again as it was
        await s.idle()

    run(project, provider, first, tools=default_tools(), permission_mode="acceptEdits")
    s = run(project, provider, resumed, tools=default_tools(), permission_mode="acceptEdits", resume=ids[0])
    assert (project / "a.txt").read_text() == "three\n"  # conversation only: the files stay
    assert is_valid(s.history) and [m.text for m in provider.requests[-1].messages][-1] == "make b"
    assert len(provider.requests[-1].messages) == 5  # turn 1's four messages, then the prompt again


def test_checkpoints_that_cannot_be_written_are_said_once(project: Path) -> None:
    provider = two_turns(project)

    async def script(s: Session) -> None:
        assert s.repl.runtime is not None
        checkpoints = s.repl.runtime.agent.context.checkpoints
        assert checkpoints is not None and checkpoints.folder is not None
        checkpoints.folder.parent.mkdir(parents=True, exist_ok=True)
        checkpoints.folder.write_text("a file where the folder should be")
        await s.type("edit a" + ENTER)
        await s.idle()
        await s.type("make b" + ENTER)
        await s.idle()

    s = run(project, provider, script, tools=default_tools(), permission_mode="acceptEdits")
    assert " ".join(s.screen.split()).count("checkpoints cannot be written") == 1
