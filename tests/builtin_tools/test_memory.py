"""The memory tool on a real folder: Anthropic's commands, its bounds, and a note that one session
writes and the next one reads through the installed `piton -p`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from piton.builtin_tools.memory import MAX_FILE_BYTES, Memory
from piton.core.conversation.session import project_key, state_dir
from piton.testing.script import ToolCall, reply
from tests.builtin_tools.helpers import call, context, text
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return Memory(tmp_path / "memories")


def run(tool: Memory, tmp_path: Path, **args: object) -> tuple[str, bool]:
    result = call(tool, context(tmp_path), **args)
    return text(result), result.is_error


def test_the_commands_work_as_anthropics_memory_tool_describes(memory: Memory, tmp_path: Path) -> None:
    assert run(memory, tmp_path, command="view", path="/memories") == ("/memories is empty.", False)
    assert run(memory, tmp_path, command="create", path="/memories/task.md", file_text="step 1\nstep 2")[
        0
    ] == ("Created /memories/task.md.")
    assert (
        run(
            memory,
            tmp_path,
            command="str_replace",
            path="/memories/task.md",
            old_str="step 2",
            new_str="step 2 done",
        )[1]
        is False
    )
    run(memory, tmp_path, command="insert", path="/memories/task.md", insert_line=0, insert_text="# Task")
    assert run(memory, tmp_path, command="view", path="/memories/task.md")[0] == (
        "     1\t# Task\n     2\tstep 1\n     3\tstep 2 done"
    )
    assert run(memory, tmp_path, command="view", path="/memories/task.md", view_range=[2, -1])[0].startswith(
        "     2\tstep 1"
    )
    run(memory, tmp_path, command="rename", old_path="/memories/task.md", new_path="/memories/done/task.md")
    listing, _ = run(memory, tmp_path, command="view", path="/memories")
    assert "/memories/done/task.md" in listing
    assert run(memory, tmp_path, command="delete", path="/memories/done")[0] == "Deleted /memories/done."
    assert run(memory, tmp_path, command="view", path="/memories")[0] == "/memories is empty."


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ({"command": "view", "path": "/etc/passwd"}, "start with /memories"),
        ({"command": "view", "path": "/memories/../../etc/passwd"}, "not a path inside"),
        ({"command": "create", "path": "/memories/a/../../x", "file_text": "x"}, "not a path inside"),
        ({"command": "create", "path": "/memories/x"}, "needs file_text"),
        (
            {"command": "str_replace", "path": "/memories/none.md", "old_str": "a", "new_str": "b"},
            "does not exist",
        ),
        ({"command": "delete", "path": "/memories"}, "cannot be deleted"),
        ({"command": "create", "path": "/memories/big", "file_text": "x" * (MAX_FILE_BYTES + 1)}, "at most"),
    ],
)
def test_what_it_cannot_do_is_one_clear_error(
    memory: Memory, tmp_path: Path, args: dict[str, object], why: str
) -> None:
    message, error = run(memory, tmp_path, **args)
    assert error and why in message


def test_str_replace_needs_exactly_one_match(memory: Memory, tmp_path: Path) -> None:
    run(memory, tmp_path, command="create", path="/memories/n.md", file_text="a a")
    message, error = run(
        memory, tmp_path, command="str_replace", path="/memories/n.md", old_str="a", new_str="b"
    )
    assert error and "occurs 2 times" in message


def test_a_note_written_in_one_session_is_read_in_the_next(fake_api: FakeAnthropicAPI, project: Path) -> None:
    note = "The user wants tabs, not spaces."
    fake_api.add(
        reply(ToolCall("memory", {"command": "create", "path": "/memories/prefs.md", "file_text": note})),
        reply("Noted."),
        reply(ToolCall("memory", {"command": "view", "path": "/memories/prefs.md"})),
        reply("You want tabs."),
    )
    for prompt in ("remember: tabs", "what do I want?"):
        done = piton_here("-p", prompt)
        assert done.returncode == 0, done.stderr
    saved = state_dir() / "memories" / project_key(project) / "prefs.md"
    assert saved.read_text() == note
    assert note in json.dumps(fake_api.bodies[3]["messages"][-1]["content"])
    tools = {t["name"]: t for t in fake_api.bodies[0]["tools"]}
    assert "compacted" in tools["memory"]["description"]

    (project / ".piton").mkdir()
    (project / ".piton" / "settings.json").write_text(json.dumps({"memoryInProject": True}))
    fake_api.add(
        reply(ToolCall("memory", {"command": "create", "path": "/memories/team.md", "file_text": "shared"})),
        reply("Saved."),
    )
    assert piton_here("-p", "save it").returncode == 0
    assert not (project / ".piton" / "memories").exists()  # a project cannot choose where memory goes
    assert (state_dir() / "memories" / project_key(project) / "team.md").read_text() == "shared"
    (Path.home() / ".piton").mkdir(exist_ok=True)
    (Path.home() / ".piton" / "settings.json").write_text(json.dumps({"memoryInProject": True}))
    fake_api.add(
        reply(ToolCall("memory", {"command": "create", "path": "/memories/team.md", "file_text": "shared"})),
        reply("Saved."),
    )
    assert piton_here("-p", "save it").returncode == 0
    assert (project / ".piton" / "memories" / "team.md").read_text() == "shared"


def test_slash_memory_lists_the_models_notes(project: Path) -> None:
    from piton.testing.scripted import ScriptedProvider
    from tests.cli.test_repl import ENTER, Session
    from tests.cli.test_repl import run as run_repl

    folder = state_dir() / "memories" / project_key(project)
    folder.mkdir(parents=True)
    (folder / "prefs.md").write_text("tabs\n")

    async def script(s: Session) -> None:
        await s.type("/memory" + ENTER)
        await s.until(lambda: "prefs.md" in s.screen)

    s = run_repl(project, ScriptedProvider(), script, tools=[Memory(folder)])
    squeezed = "".join(s.screen.split())  # a long path wraps at the screen's width, where a space was
    assert "".join(f"The model's memory (/memories): {folder}".split()) in squeezed and "(1 file)" in s.screen
    assert "prefs.md  (5 bytes)" in s.screen
