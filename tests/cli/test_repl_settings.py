"""The REPL with Claude Code's settings: the statusLine command's output replaces Piton's status
line (and is refreshed after each turn), SessionStart and SessionEnd hooks run, and a
Notification hook fires when Piton waits for a permission answer."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, Session, run
from tests.fakes.tools import Probe


def user_settings(data: dict[str, Any]) -> None:
    path = Path.home() / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def script_file(folder: Path, name: str, body: str) -> str:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def hook(command: str) -> list[dict[str, Any]]:
    return [{"hooks": [{"type": "command", "command": command}]}]


def test_the_status_line_command_shows_its_output_and_is_refreshed(project: Path, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    status = script_file(
        tmp_path,
        "status.sh",
        f"input=$(cat)\necho x >> {counter}\nn=$(wc -l < {counter})\n"
        'model=$(echo "$input" | sed -n \'s/.*"id": "\\([^"]*\\)".*/\\1/p\')\n'
        'printf "\\033[32m[%s]\\033[0m run %s\\n" "$model" "$n"\n',
    )
    # it counts its runs in a file: only unconfined can it write one that lasts
    user_settings({"statusLine": {"type": "command", "command": status, "sandbox": False}})

    async def script(s: Session) -> None:
        await s.until(lambda: s.repl.status is not None and s.repl.status.text is not None)
        first = s.repl.status.text  # type: ignore[union-attr]
        assert first is not None and first.endswith("run 1") and "[claude-sonnet-5-5]" in first
        await s.type("hello" + ENTER)
        await s.idle()
        await s.until(lambda: s.repl.status.text is not None and s.repl.status.text.endswith("run 2"))  # type: ignore[union-attr]
        toolbar = "".join(text for _, text, *_ in s.repl.view.toolbar())
        assert "run 2" in toolbar and "\x1b" not in toolbar, "colours become styles, not raw escapes"

    run(project, ScriptedProvider(reply("hi")), script)


def test_the_status_line_command_runs_in_a_read_only_sandbox(project: Path) -> None:
    user_settings(
        {"statusLine": {"type": "command", "command": "touch planted 2>/dev/null; echo ro-$PITON_SANDBOX"}}
    )

    async def script(s: Session) -> None:
        await s.until(lambda: s.repl.status is not None and s.repl.status.text is not None)
        assert s.repl.status.text == "ro-read-only"  # type: ignore[union-attr]

    run(project, ScriptedProvider(reply("hi")), script)
    assert not (project / "planted").exists(), "the status line wrote into the project"


def test_a_failing_status_command_leaves_pitons_line_and_says_so_once(project: Path, tmp_path: Path) -> None:
    user_settings({"statusLine": {"type": "command", "command": "exit 3"}})

    async def script(s: Session) -> None:
        await s.until(lambda: "statusLine command" in s.screen)
        await s.type("hello" + ENTER)
        await s.idle()

    s = run(project, ScriptedProvider(reply("hi")), script)
    assert s.screen.count("statusLine command `exit 3` failed (exit 3)") == 1
    assert "itraninaread-onlysandbox" in "".join(s.screen.split())  # however the line wrapped
    toolbar = "".join(text for _, text, *_ in s.repl.view.toolbar())
    assert "sandbox" in toolbar


def test_session_hooks_and_a_notification_on_a_permission_question(project: Path) -> None:
    files = project / ".hook-files"  # hooks run in the sandbox, where the rest of /tmp is private
    files.mkdir()
    log = files / "events"
    recorder = script_file(
        files,
        "record.sh",
        f'sed -n \'s/.*"hook_event_name": "\\([A-Za-z]*\\)".*/\\1/p\' >> {log}; echo >> {log}\n',
    )
    start = script_file(files, "start.sh", "cat >/dev/null\necho 'Remember: the API is frozen'\n")
    user_settings(
        {
            "hooks": {
                "SessionStart": hook(start),
                "SessionEnd": hook(recorder),
                "Notification": hook(recorder),
            }
        }
    )
    shell = Probe("Shell")

    async def script(s: Session) -> None:
        await s.type("run it" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type("n" + ENTER)
        await s.idle()

    provider = ScriptedProvider(reply(ToolCall("Shell", {"text": "x"})), reply("ok"))
    run(project, provider, script, tools=[shell])
    first = [b.text for b in provider.requests[0].messages[0].content]  # type: ignore[union-attr]
    assert "Remember: the API is frozen" in "\n".join(first)
    assert log.read_text().split() == ["Notification", "SessionEnd"]


def test_slash_agents_lists_the_types_and_what_is_not_applied(project: Path) -> None:
    folder = project / ".claude" / "agents" / "langs"
    folder.mkdir(parents=True)
    (folder / "researcher.md").write_text(
        "---\nname: researcher\ndescription: Finds things\ntools: Read, WebSearch\n---\nResearch.\n"
    )

    async def script(s: Session) -> None:
        await s.type("/agents" + ENTER)
        await s.until(lambda: "researcher" in s.screen and "not applied" in s.screen)

    s = run(project, ScriptedProvider(), script, tools=[Probe("Read", read_only=True)])
    assert "not applied: tools Piton does not have: WebSearch\n" in s.screen and "general-purpose" in s.screen
