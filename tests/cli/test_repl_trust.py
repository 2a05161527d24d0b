"""The REPL's workspace-trust question: asked before the session loads, once per folder, only when
the folder's files would grant something, naming what; the answer is remembered in the user's state."""

from __future__ import annotations

import json
from pathlib import Path

from piton.core.project.trust import default_store_path
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, Session, run

QUESTION = "and what its files grant? (y/N)"


def allow_shell(project: Path) -> None:
    path = project / ".piton" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": {"allow": ["Shell"], "deny": ["Echo"]}}))


def start(project: Path, answer: str | None) -> Session:
    """A REPL in `project`: answer the trust question with `answer` (None: expect none), then /status."""

    async def script(s: Session) -> None:
        if answer is not None:
            await s.until(lambda: s.repl.question is not None)
            assert s.repl.question is not None and QUESTION in s.repl.question.text
            await s.type(answer + ENTER)
        await s.until(lambda: s.repl.runtime is not None)
        assert s.repl.question is None
        await s.type("/status" + ENTER)
        await s.idle()

    return run(project, ScriptedProvider(), script, loaded=False)


def allowed(s: Session) -> list[str]:
    assert s.repl.runtime is not None and s.repl.runtime.agent.gate is not None
    return [str(r) for r in s.repl.runtime.agent.gate.permissions.allow]


def test_yes_trusts_the_folder_and_is_remembered(project: Path) -> None:
    allow_shell(project)
    s = start(project, "y")
    assert "This folder's files would grant more power" in s.screen
    assert ".piton/settings.json: allow Shell" in s.screen
    assert allowed(s) == ["Shell"] and "Workspace trust: trusted (you said yes)" in s.screen
    stored = json.loads(default_store_path().read_text())["folders"][str(project.resolve())]
    assert stored["trusted"] is True and stored["approved"] == [".piton/settings.json: allow Shell"]
    again = start(project, None)  # asked once per folder
    assert allowed(again) == ["Shell"] and "would grant" not in again.screen


def test_no_grants_nothing_keeps_the_deny_rules_and_the_next_start_asks_again(project: Path) -> None:
    allow_shell(project)
    s = start(project, "n")
    assert allowed(s) == [] and "not trusted (you said no" in s.screen
    assert s.repl.runtime is not None
    assert [str(r) for r in s.repl.runtime.agent.gate.permissions.deny] == ["Echo"]  # type: ignore[union-attr]
    again = start(project, "y")
    assert "would grant" in again.screen and allowed(again) == ["Shell"]


def test_a_grant_added_later_is_asked_about_on_its_own(project: Path) -> None:
    allow_shell(project)
    start(project, "y")
    command = project / ".piton" / "commands" / "ship.md"
    command.parent.mkdir(parents=True)
    command.write_text("---\ndescription: Ship it.\nallowed-tools: Bash\n---\nShip.\n")
    s = start(project, "n")
    assert "Since you trusted this folder, its files have added" in s.screen
    assert ".piton/commands/ship.md: command ship: allowed-tools Bash" in s.screen
    assert "allow Shell\n" not in s.screen.split("Since you trusted")[1], "only what is new is listed"
    assert allowed(s) == ["Shell"], "the earlier yes still holds"
    assert s.repl.runtime is not None and s.repl.runtime.catalog is not None
    assert not s.repl.runtime.catalog.grants(s.repl.runtime.catalog.skills["ship"])


def test_a_folder_with_nothing_to_grant_is_not_asked_about(project: Path) -> None:
    s = start(project, None)
    assert "Workspace trust: not trusted (its files grant nothing)" in s.screen


def test_the_question_names_a_projects_hooks_status_line_and_servers_and_yes_runs_them(
    project: Path, tmp_path: Path
) -> None:
    marker = project / "hook-ran"  # a hook, sandboxed, can write only the project
    settings = {
        "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]},
        "statusLine": {"type": "command", "command": "echo project-status"},
    }
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(settings))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"tracker": {"command": "tracker-mcp"}}}))
    s = start(project, "y")
    screen = " ".join(s.screen.replace("/\n", "/").split())  # long paths wrap at the console's width
    assert f".claude/settings.json: hook SessionStart: touch {marker}" in screen
    assert ".claude/settings.json: statusLine: echo project-status" in screen
    assert ".mcp.json: mcp server tracker" in screen
    assert marker.exists(), "the hook runs once the folder is trusted"


def test_no_runs_none_of_a_projects_hooks(project: Path, tmp_path: Path) -> None:
    marker = project / "hook-ran"  # a hook, sandboxed, can write only the project
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    hooks = {"SessionStart": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}
    path.write_text(json.dumps({"hooks": hooks}))
    start(project, "n")
    assert not marker.exists()


def test_trust_forget_drops_the_answer_and_the_next_start_asks_again(project: Path) -> None:
    allow_shell(project)
    assert allowed(start(project, "y")) == ["Shell"]

    async def forget(s: Session) -> None:
        await s.until(lambda: s.repl.runtime is not None)
        await s.type("/trust" + ENTER)
        await s.idle()
        await s.type("/trust forget" + ENTER)
        await s.idle()

    s = run(project, ScriptedProvider(), forget, loaded=False)
    assert "Workspace trust: trusted (you said yes)" in s.screen
    assert "Forgotten: the next start" in s.screen and allowed(s) == ["Shell"]  # this session keeps it
    again = start(project, "n")
    assert "would grant" in again.screen and allowed(again) == []
