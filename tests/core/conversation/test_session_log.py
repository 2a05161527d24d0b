"""The session log's writer: compactions by reference, one writer per session, whole lines only, a
full disk, and text no encoder can refuse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from piton.core.conversation.history import is_valid
from piton.core.conversation.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from piton.core.conversation.session import (
    SessionBusy,
    SessionLog,
    SessionStore,
    load_session,
)
from tests.helpers import CEILING_S


def step(n: int, size: int = 200) -> list[Message]:
    body = f"file {n}: " + "x" * size
    return [
        Message(
            role="assistant",
            content=[
                ToolUseBlock(id=f"toolu_{n}", name="Write", input={"file_path": f"f{n}", "content": body})
            ],
        ),
        Message(role="user", content=[ToolResultBlock(tool_use_id=f"toolu_{n}", content="written")]),
    ]


def summary(n: int) -> Message:
    return Message.user(f"summary {n}")


def encoded(message: Message) -> int:
    return len(json.dumps(message.model_dump(mode="json", exclude_none=True), ensure_ascii=False))


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def compacting_run(
    log: SessionLog, compactions: int, *, size: int, every: int = 5, keep: int = 4
) -> list[Message]:
    """What the agent does to its log: append each message, and now and then replace the history
    by a summary and the last few steps (the very same objects)."""
    history = [Message.user("start")]
    log.append_message(history[0])
    n = 0
    for c in range(compactions):
        for _ in range(every):
            n += 1
            for message in step(n, size):
                history.append(message)
                log.append_message(message)
        history = [summary(c), *history[-2 * keep :]]
        log.compacted(history, trigger="auto", pre_tokens=1000)
    return history


def test_each_message_is_written_once_however_often_the_history_is_compacted(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, "s")
    final = compacting_run(log, 30, size=20_000)
    log.close()
    appended = encoded(Message.user("start")) + sum(
        encoded(m) for n in range(1, 151) for m in step(n, 20_000)
    )
    appended += sum(encoded(summary(c)) for c in range(30))
    # each line adds its envelope (uuid, timestamp) and each boundary a uuid per kept message
    assert path.stat().st_size < appended * 1.05
    loaded = load_session(path, "s")
    assert loaded.messages == final and loaded.warnings == []


def test_a_compaction_writes_its_new_messages_and_names_the_kept_ones(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, "s")
    history = [Message.user("start"), *step(1), *step(2)]
    for message in history:
        log.append_message(message)
    log.compacted([summary(0), *history[3:]], trigger="manual", pre_tokens=10)
    log.close()
    entries = lines(path)
    uuids = [e["uuid"] for e in entries if e["type"] == "message"]
    new, boundary = entries[-2], entries[-1]
    assert new["type"] == "compact_message" and new["message"] == summary(0).model_dump(mode="json")
    assert boundary["type"] == "compact_boundary"
    assert boundary["history"] == [new["uuid"], uuids[3], uuids[4]]
    assert (boundary["trigger"], boundary["pre_tokens"]) == ("manual", 10)


def test_a_resumed_session_names_the_messages_it_loaded(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    log = store.create(tmp_path, "m")
    big = Message.user("the one big prompt " + "y" * 50_000)
    history = [big, Message(role="assistant", content=[TextBlock(text="ok")])]
    for message in history:
        log.append_message(message)
    log.compacted(history, trigger="auto")  # nothing new: only the boundary
    log.close()
    loaded, log = store.open(log.session_id, tmp_path)
    log.append_message(Message.user("more"))
    log.compacted([*loaded.messages, Message.user("more")], trigger="auto")
    log.close()
    assert log.path.read_text(encoding="utf-8").count("the one big prompt") == 1
    assert load_session(log.path, log.session_id).messages == [*history, Message.user("more")]


def test_a_crash_before_the_boundary_leaves_the_history_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, "s")
    history = [Message.user("start"), *step(1)]
    for message in history:
        log.append_message(message)
    log.compacted([summary(0)], trigger="auto")
    log.close()
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b'{"schema_version": 1, "type": "compact_boundary"')])
    loaded = load_session(path, "s")
    assert loaded.messages == history and loaded.warnings == []


def test_a_boundary_naming_an_unknown_message_keeps_the_history_before_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, "s")
    history = [Message.user("start"), Message(role="assistant", content=[TextBlock(text="hi")])]
    for message in history:
        log.append_message(message)
    log.record("compact_boundary", history=["no-such-line"], trigger="auto")
    log.append_message(Message.user("after"))
    log.close()
    loaded = load_session(path, "s")
    assert loaded.messages == [*history, Message.user("after")]
    assert loaded.warnings == ["s.jsonl: line 3 is an unreadable compaction; kept the history before it"]


def test_logs_of_the_older_compaction_formats_still_load(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, "s")
    for message in [Message.user("start"), *step(1), *step(2)]:
        log.append_message(message)
    log.record("compact_boundary", stubs={"toolu_1": "[cleared]"}, trigger="auto")
    kept = [Message.user("summary"), *step(3)]
    log.record("compact_boundary", messages=[m.model_dump(mode="json") for m in kept], trigger="auto")
    log.append_message(Message(role="assistant", content=[TextBlock(text="done")]))
    log.close()
    loaded = load_session(path, "s")
    assert loaded.messages == [*kept, Message(role="assistant", content=[TextBlock(text="done")])]
    assert loaded.warnings == []
    stubbed = SessionLog(tmp_path / "t.jsonl", "t")
    for message in [Message.user("start"), *step(1)]:
        stubbed.append_message(message)
    stubbed.record("compact_boundary", stubs={"toolu_1": "[cleared]"}, trigger="auto")
    stubbed.close()
    assert load_session(tmp_path / "t.jsonl", "t").messages[2].tool_results[0].content == "[cleared]"


def test_loading_keeps_only_what_the_current_history_needs(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, "s")
    final = compacting_run(log, 40, size=50_000)  # a 10 MB log whose history holds about 0.4 MB
    log.close()
    assert path.stat().st_size > 9_000_000
    tracemalloc.start()
    try:
        loaded = load_session(path, "s")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert loaded.messages == final
    history_bytes = sum(encoded(m) for m in final)
    assert peak < 8 * history_bytes, f"peak {peak:,} bytes for a history of {history_bytes:,}"


def test_any_text_is_written_and_loads_back_valid(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, "s")
    call = ToolUseBlock(id="toolu_1", name="Write", input={"file_path": "a\ud800", "content": "\udfff"})
    log.append_message(Message.user("go"))
    log.append_message(Message(role="assistant", content=[call]))
    log.record("todos", todos=[{"content": "fix \ud83d", "status": "pending"}])
    log.close()
    path.read_bytes().decode("utf-8")  # what is on disk is valid UTF-8
    loaded = load_session(path, "s")
    assert loaded.warnings == ["s.jsonl: 1 tool call without a result marked unfinished"]
    assert loaded.messages[1].tool_uses[0].input == {"file_path": "a\ufffd", "content": "\ufffd"}
    assert loaded.records["todos"]["todos"] == [{"content": "fix \ufffd", "status": "pending"}]
    assert is_valid(loaded.messages)


def test_a_line_nested_too_deeply_is_skipped_with_one_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, "s")
    log.append_message(Message.user("before"))
    log.close()
    with path.open("a") as f:
        f.write(
            "[" * 100_000
            + "\n"
            + '{"schema_version": 1, "type": "todos", "deep": '
            + "[" * 5_000
            + "]" * 5_000
            + "}\n"
        )
    log.append_message(Message.user("after"))
    log.close()
    loaded = load_session(path, "s")
    assert [m.text for m in loaded.messages] == ["before", "after"]
    assert loaded.warnings == [
        "s.jsonl: line 2 is nested too deeply to read; skipped it",
        "s.jsonl: line 3 is nested too deeply to read; skipped it",
    ]


# -- one writer --------------------------------------------------------------------------------------


def test_a_session_has_one_writer_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    first, second = SessionLog(path, "s"), SessionLog(path, "s")
    assert first.acquire()
    assert not second.acquire()
    said: list[str] = []
    second.report_to(said.append)
    second.append_message(Message.user("from the second"))  # refused, said, and nothing written
    first.append_message(Message.user("from the first"))
    first.close()
    # the first is done, but the second's history is not the session's: it never writes there
    second.append_message(Message.user("the second again"))
    second.close()
    assert said == [
        f"cannot write the session log {path}: it is in use by another piton; this conversation is not saved there"
    ]
    assert [m.text for m in load_session(path, "s").messages] == ["from the first"]
    third = SessionLog(path, "s")
    assert third.acquire()
    third.close()


_HOLDER = """
import sys
from pathlib import Path
from piton.core.conversation.session import SessionLog
log = SessionLog(Path(sys.argv[1]), "s")
assert log.acquire()
print("holding", flush=True)
sys.stdin.read()
"""


def test_the_lock_goes_with_the_process_however_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        assert not SessionLog(path, "s").acquire()
    finally:
        holder.kill()
        holder.wait(timeout=CEILING_S)
    log = SessionLog(path, "s")
    assert log.acquire()
    log.close()


def test_opening_a_session_being_written_refuses_or_forks(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s")
    writer = store.create(tmp_path, "claude-haiku-5-5")
    history = [Message.user("hello"), Message(role="assistant", content=[TextBlock(text="hi")])]
    for message in history:
        writer.append_message(message, model="claude-haiku-5-5")
    writer.record("todos", todos=[{"content": "a", "status": "pending"}])
    before = writer.path.read_bytes()
    pid = os.getpid()
    with pytest.raises(SessionBusy, match=f"^session {writer.session_id} is in use by another piton$"):
        store.open(writer.session_id, tmp_path)
    loaded, fork = store.open(writer.session_id, tmp_path, if_busy="fork")
    assert pid == loaded.writer_pid  # our own: the message leaves it out
    assert fork.session_id != writer.session_id
    assert loaded.warnings == [
        f"session {writer.session_id} is in use by another piton; continuing in a new session {fork.session_id}"
    ]
    fork.append_message(Message.user("in the fork"))
    fork.close()
    writer.close()
    assert writer.path.read_bytes() == before
    forked = load_session(fork.path, fork.session_id)
    assert forked.messages == [*history, Message.user("in the fork")] and forked.warnings == []
    assert forked.model == "claude-haiku-5-5"
    assert forked.records["todos"]["todos"] == [{"content": "a", "status": "pending"}]
    assert lines(fork.path)[0]["forked_from"] == writer.session_id


# -- a full disk -------------------------------------------------------------------------------------


def test_a_full_disk_is_said_once_naming_the_file(tmp_path: Path) -> None:
    log = SessionLog(Path("/dev/full"), "s")
    said: list[str] = []
    log.report_to(said.append)
    log.append_message(Message.user("one"))
    log.append_message(Message(role="assistant", content=[TextBlock(text="two")]))
    log.compacted([Message.user("summary")], trigger="auto")
    log.record("todos", todos=[])
    log.close()
    assert said == [
        "cannot write the session log /dev/full: No space left on device; the conversation goes on, "
        "and is saved once the log can be written",
        "this session could not be saved in /dev/full: No space left on device",
    ]


_FILLS_UP = """
import resource, sys
from pathlib import Path
from piton.core.conversation.messages import Message, TextBlock
from piton.core.conversation.session import SessionLog
path = Path(sys.argv[1])
log = SessionLog(path, "s")
log.report_to(lambda text: print(text, flush=True))
log.append_message(Message.user("one"))
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 100, hard))  # a disk nearly full
log.append_message(Message(role="assistant", content=[TextBlock(text="two " * 100)]))
log.record("todos", todos=[{"content": "t", "status": "pending"}])
log.append_message(Message.user("three"))
print("size", path.stat().st_size, flush=True)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # room again
log.append_message(Message(role="assistant", content=[TextBlock(text="four")]))
log.close()
"""


def test_a_log_that_could_not_be_written_catches_up_when_it_can(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _FILLS_UP, str(path)],
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    said = done.stdout.splitlines()
    one = path.read_bytes().index(b"\n") + 1
    assert said == [
        f"cannot write the session log {path}: File too large; the session up to here is intact, and the "
        "rest is saved once the log can be written again",
        f"size {one}",  # a failed write leaves nothing of itself behind
        f"the session log {path} is written again; nothing was lost",
    ]
    loaded = load_session(path, "s")
    assert [m.text for m in loaded.messages] == ["one", "two " * 100, "three", "four"]
    assert loaded.warnings == [] and loaded.records["todos"]["todos"] == [
        {"content": "t", "status": "pending"}
    ]


def test_each_line_is_in_the_file_as_soon_as_it_is_logged(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = SessionLog(path, "s")
    log.append_message(Message.user("visible at once"))
    assert path.read_bytes().endswith(b'visible at once"}]}}\n')  # no buffer holds part of it back
    log.close()
