"""No text can make the log writer fail, and no line can make loading fail or leave a history the
API would refuse."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from piton.core.conversation.history import is_valid
from piton.core.conversation.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from piton.core.conversation.session import SessionLog, load_session

# text of every kind, lone surrogates and control characters included
TEXT = st.one_of(st.text(), st.text(st.characters(categories=["Cs", "Cc", "Ll", "Zs"])))
UUIDS = [f"u{i}" for i in range(6)]
IDS = ["toolu_1", "toolu_2", "toolu_3"]


def _line(entry: dict[str, Any]) -> bytes:
    return json.dumps({"schema_version": 1, **entry}).encode()


_BLOCK = st.one_of(
    TEXT.map(lambda t: {"type": "text", "text": t}),
    st.sampled_from(IDS).map(lambda i: {"type": "tool_use", "id": i, "name": "Read", "input": {}}),
    st.tuples(st.sampled_from(IDS), TEXT).map(
        lambda p: {"type": "tool_result", "tool_use_id": p[0], "content": p[1]}
    ),
)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant"]), "content": st.lists(_BLOCK, max_size=3)}
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
_ENTRY = st.one_of(
    st.tuples(st.sampled_from(UUIDS), _MESSAGE).map(
        lambda p: {"type": "message", "uuid": p[0], "message": p[1]}
    ),
    st.tuples(st.sampled_from(UUIDS), _MESSAGE).map(
        lambda p: {"type": "compact_message", "uuid": p[0], "message": p[1]}
    ),
    st.lists(st.sampled_from(UUIDS), max_size=4).map(lambda h: {"type": "compact_boundary", "history": h}),
    st.lists(_MESSAGE, max_size=3).map(lambda m: {"type": "compact_boundary", "messages": m}),
    st.dictionaries(st.sampled_from(IDS), TEXT, max_size=2).map(
        lambda s: {"type": "compact_boundary", "stubs": s}
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["session", "resumed", "todos", "result"])}, optional={"pid": _JSON}
    ),
    st.dictionaries(st.sampled_from(["type", "uuid", "message", "history"]), _JSON),
)
LINE = st.one_of(
    _ENTRY.map(_line),
    st.tuples(_ENTRY.map(_line), st.integers(0, 80)).map(lambda p: p[0][: p[1]]),  # torn
    st.binary(max_size=60),  # garbage, NUL bytes and invalid UTF-8 included
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.integers(1, 3000).map(lambda n: b"[" * n),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINE, max_size=10), st.booleans())
def test_no_line_makes_loading_fail(lines: list[bytes], newline_at_end: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        path.write_bytes(b"\n".join(lines) + (b"\n" if newline_at_end else b""))
        loaded = load_session(path, "s")
        assert is_valid(loaded.messages)
        # opening it for writing mends it, and what it then holds loads the same history
        log = SessionLog(path, "s")
        assert log.acquire()
        log.close()
        data = path.read_bytes()
        assert data == b"" or data.endswith(b"\n")
        again = load_session(path, "s")
        assert is_valid(again.messages) and again.messages == loaded.messages


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4))
def test_any_text_is_written_and_comes_back_valid(texts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        log = SessionLog(path, "s")
        said: list[str] = []
        log.report_to(said.append)
        history = [Message.user(texts[0])]
        for n, text in enumerate(texts[1:]):
            call = ToolUseBlock(id=f"toolu_{n}", name="Write", input={"content": text, text: [text]})
            history += [
                Message(role="assistant", content=[TextBlock(text=text), call]),
                Message(role="user", content=[ToolResultBlock(tool_use_id=f"toolu_{n}", content=text)]),
            ]
        for message in history:
            log.append_message(message)
        log.record("todos", todos=[{"content": t} for t in texts])
        log.compacted([Message.user(texts[-1]), *history[1:]], trigger="auto")
        log.close()
        assert said == []
        path.read_bytes().decode("utf-8")  # valid UTF-8 on disk
        loaded = load_session(path, "s")
        assert loaded.warnings == [] and is_valid(loaded.messages)
        assert len(loaded.messages) == len(history)
        assert not any("\ud800" <= c <= "\udfff" for c in json.dumps(loaded.records, ensure_ascii=False))
