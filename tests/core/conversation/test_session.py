from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from piton.core.conversation.history import RepairReport, is_valid, repair, repair_reporting
from piton.core.conversation.messages import (
    UNFINISHED_TOOL_RESULT,
    Base64ImageSource,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.conversation.session import (
    SCHEMA_VERSION,
    SessionError,
    SessionStore,
    load_session,
    project_key,
    state_dir,
)
from piton.core.conversation.usage import Usage

CONVERSATION = [
    Message.user("read main.py"),
    Message(
        role="assistant",
        content=[
            ThinkingBlock(thinking="Read it.", signature="sig-1"),
            RedactedThinkingBlock(data="opaque-bytes"),
            ToolUseBlock(id="toolu_1", name="Read", input={"file_path": "main.py"}),
        ],
    ),
    Message(
        role="user",
        content=[
            ToolResultBlock(
                tool_use_id="toolu_1",
                content=[
                    TextBlock(text="print('hi')"),
                    ImageBlock(source=Base64ImageSource(media_type="image/png", data="iVBORw0KGgo=")),
                ],
            )
        ],
    ),
    Message(role="assistant", content=[TextBlock(text="It prints hi.")]),
]


def write_session(store: SessionStore, cwd: Path, messages: list[Message] = CONVERSATION) -> tuple[str, Path]:
    log = store.create(cwd, "claude-sonnet-5-5")
    for m in messages:
        log.append_message(
            m, usage=Usage(10, 2) if m.role == "assistant" else None, model="claude-sonnet-5-5"
        )
    log.close()
    return log.session_id, log.path


def test_sessions_live_under_the_state_dir_per_project(tmp_path: Path) -> None:
    store = SessionStore()
    session_id, path = write_session(store, tmp_path)
    assert path.is_relative_to(state_dir())
    assert str(state_dir()).startswith(os.environ["XDG_STATE_HOME"])
    assert path.parent.name == project_key(tmp_path)
    assert not any(tmp_path.iterdir()), "nothing may be written inside the project"
    assert path.name == f"{session_id}.jsonl"


def test_every_line_carries_the_schema_version(tmp_path: Path) -> None:
    _, path = write_session(SessionStore(tmp_path / "s"), tmp_path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 1 + len(CONVERSATION)
    assert {line["schema_version"] for line in lines} == {SCHEMA_VERSION}
    assert lines[0]["type"] == "session" and lines[0]["model"] == "claude-sonnet-5-5"


def test_a_session_loads_back_exactly(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, _ = write_session(store, tmp_path)
    loaded, log = store.open(session_id, tmp_path)
    assert loaded.messages == CONVERSATION
    assert loaded.warnings == []
    assert loaded.model == "claude-sonnet-5-5"
    assert log.session_id == session_id


def test_a_truncated_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, path = write_session(store, tmp_path)
    with path.open("a") as f:
        f.write(
            '{"schema_version": 1, "type": "message", "message": {"role": "user", "cont'
        )  # killed mid-write
    loaded = load_session(path, session_id)
    assert loaded.messages == CONVERSATION
    assert loaded.warnings == [f"{path.name}: last line is corrupt (an interrupted write?); skipped it"]


def test_opening_for_writing_moves_a_torn_last_line_aside_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, path = write_session(store, tmp_path)
    torn = b'{"schema_version": 1, "type": "message", "message": {"role": "user", "cont'
    with path.open("ab") as f:
        f.write(torn)
    loaded, log = store.open(session_id, tmp_path)
    assert loaded.messages == CONVERSATION
    aside = path.with_name(path.name + ".corrupt")
    assert loaded.warnings == [
        f"{path.name}: last line is corrupt (an interrupted write?); moved it to {aside.name}"
    ]
    assert aside.read_bytes() == torn + b"\n"
    log.close()
    assert path.read_bytes().endswith(b"\n") and torn not in path.read_bytes()
    again, log = store.open(session_id, tmp_path)
    log.close()
    assert again.warnings == [] and again.messages == CONVERSATION


def test_a_last_line_missing_only_its_newline_is_kept(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, path = write_session(store, tmp_path, CONVERSATION[:3])
    last = {"schema_version": 1, "type": "message", "message": CONVERSATION[3].model_dump(mode="json")}
    with path.open("a") as f:
        f.write(json.dumps(last))
    loaded, log = store.open(session_id, tmp_path)
    log.append_message(Message.user("next"))
    log.close()
    assert loaded.messages == CONVERSATION and loaded.warnings == []
    assert load_session(path, session_id).messages == [*CONVERSATION, Message.user("next")]
    assert not path.with_name(path.name + ".corrupt").exists()


def test_appending_after_a_truncated_line_keeps_both_readable(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, path = write_session(store, tmp_path)
    with path.open("a") as f:
        f.write('{"schema_version": 1, "type": "mess')
    _, log = store.open(session_id, tmp_path)
    log.append_message(Message.user("and now?"))
    log.close()
    loaded = load_session(path, session_id)
    assert loaded.messages[-1].text == "and now?"
    assert loaded.warnings == []


def test_a_corrupt_middle_line_is_skipped_and_the_pairing_repaired(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, path = write_session(store, tmp_path)
    lines = path.read_text().splitlines()
    lines[3] = "\x00\x00garbage"  # the tool result line
    path.write_text("\n".join(lines) + "\n")
    loaded, _ = store.open(session_id, tmp_path)
    assert any("line 4 is corrupt" in w for w in loaded.warnings)
    assert is_valid(loaded.messages)
    assert loaded.messages[2].tool_results[0].content == UNFINISHED_TOOL_RESULT


def test_a_session_killed_during_a_tool_call_resumes_valid(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, _ = write_session(store, tmp_path, CONVERSATION[:2])
    loaded, _ = store.open(session_id, tmp_path)
    assert is_valid(loaded.messages)
    assert loaded.messages[-1].tool_results[0].is_error
    assert loaded.warnings == [f"{session_id}.jsonl: 1 tool call without a result marked unfinished"]


def test_lines_of_another_schema_version_are_skipped(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, path = write_session(store, tmp_path)
    with path.open("a") as f:
        f.write(
            json.dumps({"schema_version": 99, "type": "message", "message": {"role": "user", "content": []}})
            + "\n"
        )
    loaded, _ = store.open(session_id, tmp_path)
    assert loaded.messages == CONVERSATION
    assert "schema_version 99" in loaded.warnings[0]


def test_repair_counts_what_it_dropped_apart_from_what_it_added() -> None:
    stray = [
        ToolResultBlock(tool_use_id="toolu_9", content="x"),
        ToolResultBlock(tool_use_id="toolu_8", content="y"),
    ]
    history = [
        Message(role="assistant", content=[TextBlock(text="before any prompt")]),
        *CONVERSATION[:2],
        Message(role="user", content=[*stray, TextBlock(text="and?")]),
    ]
    repaired, report = repair_reporting(history)
    assert repaired == repair(history) and is_valid(repaired)
    assert report == RepairReport(results_dropped=2, calls_interrupted=1, assistant_dropped=1)
    assert report.describe() == (
        "2 tool results without a call dropped; 1 tool call without a result marked unfinished; "
        "1 assistant message before the first prompt dropped"
    )
    assert not repair_reporting(CONVERSATION)[1] and repair_reporting(CONVERSATION)[1].describe() == ""


def test_what_a_load_repaired_is_said_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, path = write_session(store, tmp_path)
    lines = path.read_text().splitlines()
    lines[3] = "garbage"  # the tool result
    path.write_text("\n".join(lines) + "\n")
    first, log = store.open(session_id, tmp_path)
    log.close()
    assert first.warnings == [
        f"{path.name}: line 4 is corrupt (an interrupted write?); skipped it",
        f"{path.name}: 1 tool call without a result marked unfinished",
    ]
    again, log = store.open(session_id, tmp_path)
    log.append_message(Message.user("next"))
    log.close()
    assert again.warnings == [] and again.messages == first.messages
    assert load_session(path, session_id).messages == [*first.messages, Message.user("next")]


def test_lines_of_a_newer_piton_are_never_written_over(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, path = write_session(store, tmp_path)
    with path.open("a") as f:
        f.write(json.dumps({"schema_version": SCHEMA_VERSION + 1, "type": "message", "message": {}}) + "\n")
    for where in ("last line", "line 6"):  # no repair boundary hides its history from the Piton that wrote it
        loaded, log = store.open(session_id, tmp_path)
        log.close()
        assert loaded.warnings == [
            f"{path.name}: {where} has schema_version {SCHEMA_VERSION + 1}; skipped it"
        ]
    assert '"compact_boundary"' not in path.read_text()


def test_latest_is_the_most_recent_session_of_this_project(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    _, older_path = write_session(store, here)
    newer, _ = write_session(store, here)
    write_session(store, elsewhere)
    os.utime(older_path, (1, 1))
    assert store.latest(here) == newer
    assert store.latest(tmp_path / "never-used") is None


def test_find_looks_in_other_projects_too(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    session_id, path = write_session(store, tmp_path / "a")
    assert store.find(session_id, tmp_path / "b") == path


@pytest.mark.parametrize("bad", ["../../etc/passwd", "", "a/b", "-rf"])
def test_ids_that_are_not_ids_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(SessionError, match="not a session id"):
        SessionStore(tmp_path / "s").find(bad, tmp_path)


def test_an_unknown_session_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="no session 1234"):
        SessionStore(tmp_path / "s").find("1234", tmp_path)


def test_project_keys_are_stable_and_distinct(tmp_path: Path) -> None:
    assert project_key(tmp_path / "a-b") == project_key(tmp_path / "a-b")
    assert project_key(tmp_path / "a-b") != project_key(tmp_path / "a" / "b")


def test_sessions_live_in_the_xdg_state_folder_and_a_relative_one_is_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On Linux; macOS keeps them in ~/Library/Application Support, whatever XDG says."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    default = home / "Library" / "Application Support" / "piton" if sys.platform == "darwin" else None
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert state_dir() == (default or tmp_path / "state" / "piton")
    for ignored in ("relative/state", ""):
        monkeypatch.setenv("XDG_STATE_HOME", ignored)
        assert state_dir() == (default or home / ".local" / "state" / "piton")
    monkeypatch.delenv("XDG_STATE_HOME")
    assert state_dir() == (default or home / ".local" / "state" / "piton")
