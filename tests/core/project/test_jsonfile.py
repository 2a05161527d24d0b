"""Reading JSON that someone else wrote: nesting counted before parsing, every failure one line."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from piton.core.project.jsonfile import MAX_DEPTH, JsonFileError, parse, read


def nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def test_nesting_up_to_the_bound_parses_and_beyond_it_is_refused_before_parsing() -> None:
    assert parse(nested(MAX_DEPTH))["a"]["a"]
    for text in (nested(MAX_DEPTH + 1), "[" * 100_000, "[" * 10_000_000):
        started = time.thread_time()  # this thread's CPU time: the work's cost, however busy the machine
        with pytest.raises(JsonFileError, match=f"nests deeper than {MAX_DEPTH} levels"):
            parse(text)
        assert time.thread_time() - started < 1


def test_brackets_inside_strings_are_not_nesting() -> None:
    text = '{"note": "[[[[{{{{' + "[" * 200 + '", "esc\\"[[[": ["\\\\", "]]]"]}'
    assert parse(text) == {"note": "[[[[{{{{" + "[" * 200, 'esc"[[[': ["\\", "]]]"]}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not valid JSON: Expecting property name"),
        ("1" * 5000, "not usable JSON: Exceeds the limit (4300 digits)"),
        ("", "not valid JSON: Expecting value"),
    ],
)
def test_each_failure_is_one_line(text: str, problem: str) -> None:
    with pytest.raises(JsonFileError) as raised:
        parse(text)
    assert str(raised.value).startswith(problem) and "\n" not in str(raised.value)


def test_files_that_are_too_big_or_not_files_or_not_text(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read(tmp_path / "missing.json")
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * 600_000 + "0]")
    with pytest.raises(JsonFileError, match="larger than 1,000,000 bytes"):
        read(big)
    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(JsonFileError, match="not a regular file"):
        read(tmp_path / "fifo.json")  # without O_NONBLOCK this open would wait for a writer forever
    (tmp_path / "latin1.json").write_bytes(b'{"caf\xe9": 1}')
    with pytest.raises(JsonFileError, match="not UTF-8"):
        read(tmp_path / "latin1.json")
    (tmp_path / "bom.json").write_text('\ufeff{"ok": true}', encoding="utf-8")
    assert read(tmp_path / "bom.json") == {"ok": True}
