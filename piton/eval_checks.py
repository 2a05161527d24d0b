"""The checks of a `piton eval` case (`[[expect]]`): on the answer, how the run ended, the skills
and tools it used, the files it left and commands run in the copy afterwards."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from piton.core.conversation.messages import ToolUseBlock
from piton.core.records import record

CHECK_KEYS = {
    "answer_contains", "answer_not_contains", "result", "file", "tool_called", "tool_not_called", "skill",
    "command",
}  # fmt: skip


@record
class Check:
    what: str
    passed: bool
    detail: str = ""


def check(
    expect: dict[str, Any],
    project: Path,
    answer: str,
    subtype: str,
    calls: list[ToolUseBlock],
    skills: list[str],
) -> Check:
    if "answer_contains" in expect:
        wanted = str(expect["answer_contains"])
        return Check(f"answer contains {wanted!r}", wanted.lower() in answer.lower(), answer[:120])
    if "answer_not_contains" in expect:
        unwanted = str(expect["answer_not_contains"])
        return Check(f"answer lacks {unwanted!r}", unwanted.lower() not in answer.lower(), answer[:120])
    if "result" in expect:
        return Check(f"result is {expect['result']}", subtype == expect["result"], subtype)
    if "skill" in expect:
        name = str(expect["skill"])
        return Check(f"skill {name} triggered", name in skills, ", ".join(skills) or "no skill")
    if "tool_called" in expect or "tool_not_called" in expect:
        name = str(expect.get("tool_called") or expect.get("tool_not_called"))
        needle = str(expect.get("input_contains", ""))
        hits = [c for c in calls if c.name == name and needle in json.dumps(c.input, ensure_ascii=False)]
        what = f"{name}" + (f" with {needle!r}" if needle else "")
        made = ", ".join(c.name for c in calls) or "none"
        if "tool_called" in expect:
            return Check(f"{what} called", bool(hits), f"calls: {made}")
        return Check(f"{what} not called", not hits, f"calls: {made}")
    if "command" in expect:
        return _command_check(expect, project)
    return _file_check(expect, project)


def _command_check(expect: dict[str, Any], project: Path) -> Check:
    """A command run in the project after the run (`git log -1 --format=%s`), its output checked."""
    command = str(expect["command"])
    done = subprocess.run(command, shell=True, cwd=project, capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    if "output_contains" in expect:
        wanted = str(expect["output_contains"])
        return Check(f"`{command}` prints {wanted!r}", wanted in output, output.strip()[:120])
    return Check(f"`{command}` succeeds", done.returncode == 0, output.strip()[:120])


def _file_check(expect: dict[str, Any], project: Path) -> Check:
    relative = str(expect["file"])
    path = project / relative
    if not path.resolve().is_relative_to(project):
        return Check(f"{relative}", False, "outside the project: a case checks its own files only")
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    if expect.get("exists") is False:
        return Check(f"{relative} does not exist", text is None and not path.exists())
    if text is None:
        return Check(f"{relative} exists", False, "missing")
    if "equals" in expect:
        return Check(f"{relative} equals the expected text", text == expect["equals"], text[:120])
    if "contains" in expect:
        return Check(
            f"{relative} contains {expect['contains']!r}", str(expect["contains"]) in text, text[:120]
        )
    if "not_contains" in expect:
        unwanted = str(expect["not_contains"])
        return Check(f"{relative} lacks {unwanted!r}", unwanted not in text, text[:120])
    return Check(f"{relative} exists", True)
