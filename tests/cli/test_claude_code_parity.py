"""Piton's stream-json against Claude Code's own, line for line and key for key: the task in
`tests/fixtures/claude_code/task.py`, which Claude Code 2.1.332 ran against the same fake API to
record `tools_task.jsonl`. What Claude Code writes and Piton does not is listed here and in the
manual (docs/print-mode.md, "Differences from Claude Code"), each with its reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_piton_command import piton
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.fixtures.claude_code.task import RECORDING, argv, prepare, replies

DOCS = Path(__file__).parents[2] / "docs" / "print-mode.md"
# keys of Claude Code's lines Piton leaves out, by line; the manual says why for each
LEFT_OUT = {
    "init": {
        "fast_mode_disabled_reason",
        "memory_paths",
        "messaging_socket_path",
        "per_turn_effort_active",
        "terminal_slash_commands",
        "ultrathink_available",
        "ultrathink_typed_raises",
        "view_mode",
    },
    "user": {"tool_result_meta"},
    "result": {
        "fast_mode_disabled_reason",
        "first_content_frame_ms",
        "queued_turn_count",
        "time_to_request_ms",
    },
    "usage": {"output_tokens_details", "speed", "inference_geo", "iterations", "fallback_credit"},
    "modelUsage": {"thinkingTokens", "provider", "costBasis"},
}
CLAUDE_CODE_ONLY_LINES = {("system", "per_turn_effort_changed")}


def kind(line: dict[str, Any]) -> str:
    return str(line["subtype"] if line["type"] == "system" else line["type"])


def shape(lines: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Each line's type, subtype and content blocks; a run of thinking_tokens lines as one (how
    often they come depends on how the thinking streamed)."""
    out: list[tuple[str, ...]] = []
    for line in lines:
        if (line["type"], line.get("subtype")) in CLAUDE_CODE_ONLY_LINES:
            continue
        content = line.get("message", {}).get("content")
        blocks = tuple(b["type"] for b in content) if isinstance(content, list) else ()
        entry = (line["type"], str(line.get("subtype")), *blocks)
        if not (out and entry == out[-1] and line.get("subtype") == "thinking_tokens"):
            out.append(entry)
    return out


def test_piton_writes_claude_codes_lines_and_keys(fake_api: FakeAnthropicAPI, project: Path) -> None:
    recorded = [json.loads(line) for line in RECORDING.read_text().splitlines()]
    prepare(project)
    fake_api.add(*replies())
    done = piton(*argv())
    assert done.returncode == 0, done.stderr
    ours = [json.loads(line) for line in done.stdout.splitlines()]
    assert shape(ours) == shape(recorded)
    theirs = [line for line in recorded if (line["type"], line.get("subtype")) not in CLAUDE_CODE_ONLY_LINES]
    theirs = [line for i, line in enumerate(theirs) if not _repeated_thinking(theirs, i)]
    ours = [line for i, line in enumerate(ours) if not _repeated_thinking(ours, i)]
    for mine, reference in zip(ours, theirs, strict=True):
        missing = set(reference) - set(mine) - LEFT_OUT.get(kind(mine), set())
        assert not missing, (kind(mine), sorted(missing))
        if "message" in reference and isinstance(reference["message"], dict):
            assert set(reference["message"]) <= set(mine["message"]), kind(mine)
        if isinstance(reference.get("tool_use_result"), dict):
            assert set(mine["tool_use_result"]) == set(reference["tool_use_result"]), reference[
                "tool_use_result"
            ]
    _same_values(ours, theirs)


def _repeated_thinking(lines: list[dict[str, Any]], i: int) -> bool:
    return i > 0 and lines[i].get("subtype") == lines[i - 1].get("subtype") == "thinking_tokens"


def _same_values(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    """Where the value does not depend on the machine or the moment, it is Claude Code's."""
    results = [
        (m["tool_use_result"], r["tool_use_result"])
        for m, r in zip(ours, theirs, strict=True)
        if m["type"] == "user"
    ]
    for mine, reference in results:
        for key in ("type", "file", "content", "structuredPatch", "originalFile", "oldString", "newString"):
            assert mine.get(key) == reference.get(key), key
        for key in ("stdout", "numFiles", "mode", "replaceAll", "userModified", "interrupted"):
            assert mine.get(key) == reference.get(key), key
    mine_result, their_result = ours[-1], theirs[-1]
    for key in ("type", "subtype", "is_error", "result", "num_turns", "stop_reason", "terminal_reason"):
        assert mine_result[key] == their_result[key], key
    assert set(their_result["usage"]) - set(mine_result["usage"]) == LEFT_OUT["usage"]
    [their_model] = their_result["modelUsage"].values()
    [my_model] = mine_result["modelUsage"].values()
    assert set(their_model) - set(my_model) == LEFT_OUT["modelUsage"]


def test_every_key_left_out_is_explained_in_the_manual() -> None:
    manual = DOCS.read_text()
    section = manual[manual.index("## Differences from Claude Code") :]
    for keys in LEFT_OUT.values():
        for key in keys:
            assert f"`{key}`" in section, key
