"""Faults inside a turn, through the real `piton -p` against the fake API: text that is not valid
Unicode, answers that end in ways people would miss, a tool call cut off by the output limit, and
a crash of Piton's own, each labelled for what it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from piton.core.context.result_store import FileResultStore, ResultCapper
from piton.core.conversation.history import is_valid
from piton.core.conversation.messages import Message
from piton.core.conversation.session import SessionStore, load_session
from piton.core.tools import ToolResult
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.fakes.tools import NoOp, make_agent
from tests.helpers import collect, piton_here


def latest_session(project: Path) -> tuple[str, list[Message], list[str]]:
    store = SessionStore()
    session_id = store.latest(project)
    assert session_id is not None
    loaded = load_session(store.project_dir(project) / f"{session_id}.jsonl", session_id)
    return session_id, loaded.messages, loaded.warnings


def tool_results(body: dict[str, object]) -> list[dict[str, object]]:
    messages = body["messages"]
    assert isinstance(messages, list)
    return [b for b in messages[-1]["content"] if b["type"] == "tool_result"]


def test_a_lone_surrogate_from_the_model_is_written_logged_and_resumed(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    raw = json.dumps({"file_path": "out.txt", "content": "PLACEHOLDER"}).replace("PLACEHOLDER", "a\\ud800b")
    fake_api.add(reply(ToolCall("Write", raw_json=raw)), reply("written"))
    done = piton_here("-p", "write it", "--permission-mode", "acceptEdits")
    assert (done.returncode, done.stdout) == (0, "written\n"), done.stderr
    assert (project / "out.txt").read_bytes() == "a\ufffdb".encode()
    session_id, messages, warnings = latest_session(project)
    assert warnings == [] and is_valid(messages)
    fake_api.add(reply("still here"))
    again = piton_here("-p", "and now?", "--resume", session_id)
    assert (again.returncode, again.stdout) == (0, "still here\n"), again.stderr


def test_an_edit_beside_a_stray_byte_keeps_the_byte_and_the_session(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    original = "naïve start\nbad \xff byte\nline three\n".encode("utf-8", "surrogateescape")
    original = original.replace("\xff".encode(), b"\xff")  # one byte that is not UTF-8
    (project / "f.txt").write_bytes(original)
    fake_api.add(
        reply(ToolCall("Read", {"file_path": "f.txt"})),
        reply(ToolCall("Edit", {"file_path": "f.txt", "old_string": "line three", "new_string": "line 3"})),
        reply("edited"),
    )
    done = piton_here("-p", "edit it", "--permission-mode", "acceptEdits")
    assert (done.returncode, done.stdout) == (0, "edited\n"), done.stderr
    assert (project / "f.txt").read_bytes() == original.replace(b"line three", b"line 3")
    [shown] = tool_results(fake_api.bodies[1])
    assert "bad \ufffd byte" in str(shown["content"])  # the model sees a stand-in, the file keeps its byte
    [edited] = tool_results(fake_api.bodies[2])
    assert not edited.get("is_error") and "line 3" in str(edited["content"])
    _, messages, warnings = latest_session(project)
    assert warnings == [] and is_valid(messages)


def test_the_model_can_edit_the_line_with_the_stray_byte(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / "f.txt").write_bytes("é\nbad \xff byte\n".encode("latin-1").replace(b"\xe9", "é".encode()))
    fake_api.add(
        reply(ToolCall("Read", {"file_path": "f.txt"})),
        reply(
            ToolCall(
                "Edit",
                {"file_path": "f.txt", "old_string": "bad \ufffd byte", "new_string": "odd \ufffd byte!"},
            )
        ),
        reply("done"),
    )
    done = piton_here("-p", "edit", "--permission-mode", "acceptEdits")
    assert done.returncode == 0, done.stderr
    assert (project / "f.txt").read_bytes() == "é\n".encode() + b"odd \xff byte!\n"


def test_answers_that_end_unusually_are_said_on_stderr(fake_api: FakeAnthropicAPI, project: Path) -> None:
    cases = [
        (reply("The first half of", stop_reason="max_tokens"), "cut off at the output limit"),
        (reply(stop_reason="refusal"), "declined to answer"),
        (reply(""), "empty answer"),
    ]
    for script, said in cases:
        fake_api.add(script)
        done = piton_here("-p", "go")
        assert done.returncode == 0
        assert [line for line in done.stderr.splitlines() if said in line], (said, done.stderr)
    fake_api.add(reply("A plain answer."))
    plain = piton_here("-p", "go")
    assert (plain.returncode, plain.stderr) == (0, "")


def test_a_tool_call_cut_off_by_the_output_limit_is_named_as_such(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    cut = ToolCall("Write", raw_json='{"file_path": "big.txt", "content": "line 1\\nline 2\\nli')
    fake_api.add(reply("Writing it.", cut, stop_reason="max_tokens"), reply("I will write less."))
    done = piton_here("-p", "write a big file", "--permission-mode", "acceptEdits")
    assert (done.returncode, done.stdout) == (0, "I will write less.\n"), done.stderr
    [result] = tool_results(fake_api.bodies[1])
    assert result["is_error"] and "output limit" in str(result["content"])
    assert not (project / "big.txt").exists()


class _BrokenCapper(ResultCapper):
    """A result store whose disk is gone: the failure is Piton's, not the tool's or the user's."""

    def apply(self, tool: str, tool_use_id: str, result: ToolResult) -> ToolResult:
        raise OSError(28, "No space left on device")


def test_a_crash_is_not_recorded_as_the_users_interrupt(tmp_path: Path) -> None:
    provider = ScriptedProvider(reply(ToolCall("NoOp", {"text": "x"})))
    agent = make_agent(provider, NoOp(), cwd=tmp_path)
    agent.capper = _BrokenCapper(FileResultStore(tmp_path))
    with pytest.raises(OSError, match="No space left"):  # the crash reaches the caller
        collect(agent.run("go"))
    assert is_valid(agent.history)
    [result] = agent.history[-2].tool_results
    assert result.is_error and "Piton failed while running it (OSError" in str(result.content)
    assert "by the user" not in str(result.content)
    assert agent.history[-1].text.startswith("[Request ended by an internal error of Piton: OSError")


def test_a_tool_input_nested_too_deeply_is_an_error_the_model_sees(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    deep = '{"file_path": "x.txt", "content": ' + "[" * 100_000 + "]" * 100_000 + "}"
    fake_api.add(reply(ToolCall("Write", raw_json=deep)), reply("gave up"))
    done = piton_here("-p", "write", "--permission-mode", "acceptEdits")
    assert (done.returncode, done.stdout) == (0, "gave up\n"), done.stderr
    [result] = tool_results(fake_api.bodies[1])
    assert result["is_error"] and "nested too deeply" in str(result["content"])
    _, messages, warnings = latest_session(project)
    assert warnings == [] and is_valid(messages)
