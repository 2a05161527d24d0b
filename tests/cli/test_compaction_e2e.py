"""Compaction from the `piton` command: a real process and the real SDK against the fake API, with a
small window set in the project's settings and reported usage that grows turn by turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from piton.core.context.compaction import SUMMARY_HEADER
from piton.testing.script import Reply, ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

FIRST_PROMPT = "Rename every helper in src/ to snake_case; do not touch tests/."


def code(lines: int, tag: str) -> str:
    return "\n".join(f"def {tag}_{i}(value):\n    return value * {i}  # {tag} line {i}" for i in range(lines))


def summary(body: dict[str, Any]) -> Reply:
    return reply("## Summary\nRenaming helpers in src/; three done. Next: the rest.", output_tokens=200)


def first_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def test_auto_compaction_in_print_mode_and_resuming_after_it(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    (project / ".piton").mkdir()
    (project / ".piton" / "settings.json").write_text(json.dumps({"contextWindow": 20_000}))
    (project / "a.py").write_text("x = 1\n")
    # 20,000 tokens with the reply's share held back: compaction starts at 15,000
    sizes = [6_000, 9_000, 12_000, 14_500, 15_000]
    fake_api.add(
        *(
            reply(code(130, f"t{i}"), ToolCall("Glob", {"pattern": "*.py"}), input_tokens=n, output_tokens=10)
            for i, n in enumerate(sizes)
        ),
        summary,
        reply("Carrying on with the rest.", ToolCall("Glob", {"pattern": "src/*.py"})),
        reply("All helpers renamed."),
    )
    done = piton_here("-p", FIRST_PROMPT, "--output-format", "stream-json", "--verbose")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [(line["type"], line.get("subtype")) for line in lines]
    boundary = kinds.index(("system", "compact_boundary"))
    # a reply is a line per content block: where each reply (a message id) first and last appears
    replies: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        if line["type"] == "assistant":
            replies.setdefault(line["message"]["id"], []).append(i)
    spans = list(replies.values())
    assert spans[4][-1] < boundary < spans[5][0], "after the fifth reply, before the next"
    assert kinds.count(("system", "compact_boundary")) == 1
    metadata = lines[boundary]["compact_metadata"]
    assert metadata["trigger"] == "auto" and metadata["pre_tokens"] >= 15_000
    result = lines[-1]
    assert (result["subtype"], result["result"]) == ("success", "All helpers renamed.")
    assert result["metrics"]["compactions"] == 1
    assert result["metrics"]["tools"]["Glob"]["calls"] == 6

    bodies = fake_api.bodies
    assert "tools" not in bodies[5] and "<conversation>" in first_text(bodies[5])
    after = bodies[6]
    assert len(json.dumps(after["messages"])) < len(json.dumps(bodies[4]["messages"])) / 2
    opening = first_text(after)
    assert opening.startswith(SUMMARY_HEADER)
    assert f"<user-message>\n{FIRST_PROMPT}\n</user-message>" in opening
    assert "t0_1(value)" not in json.dumps(after["messages"]), "the first reply was summarised away"

    fake_api.add(reply("The rest is in src/b.py."))
    resumed = piton_here("-p", "--resume", result["session_id"], "what is left?", "--output-format", "json")
    assert resumed.returncode == 0, resumed.stderr
    body = fake_api.bodies[-1]
    assert first_text(body).startswith(SUMMARY_HEADER)
    assert "t0_1(value)" not in json.dumps(body["messages"])
    texts = [b.get("text") for m in body["messages"] for b in m["content"] if isinstance(b, dict)]
    assert texts[-1] == "what is left?" and "All helpers renamed." in texts
