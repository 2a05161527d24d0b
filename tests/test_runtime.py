"""Assembling a run from settings and options, and what the assembled parts do together."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from piton.core.conversation.session import SessionStore, load_session
from piton.core.options import RunOptions
from piton.core.safety.permissions import Permissions
from piton.runtime import Parts, Runtime, SetupError, build_runtime
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.fakes.tools import Probe
from tests.helpers import collect


def settings(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def build(project: Path, provider: ScriptedProvider | None = None, **options: Any) -> Runtime:
    return build_runtime(
        RunOptions(cwd=project, **options), provider or ScriptedProvider(), parts=Parts(tools=[])
    )


def rules(runtime: Runtime) -> Permissions:
    """The permission rules the runtime's agent is checked against (a run always has a gate)."""
    assert runtime.agent.gate is not None
    return runtime.agent.gate.permissions


def test_rules_add_up_across_settings_files_and_flags_in_a_trusted_folder(project: Path) -> None:
    settings(
        Path.home() / ".piton" / "settings.json",
        {
            "permissions": {"allow": ["Bash(git status)"], "deny": ["Bash(rm:*)"]},
            "trustedFolders": [str(project)],
        },
    )
    settings(
        project / ".piton" / "settings.json",
        {"permissions": {"allow": ["Bash(npm test:*)"], "defaultMode": "plan"}},
    )
    runtime = build(project, allowed_tools=["Edit"], disallowed_tools=["Bash(curl:*)"])
    permissions = rules(runtime)
    assert [str(r) for r in permissions.allow] == ["Bash(git status)", "Bash(npm test:*)", "Edit"]
    assert [str(r) for r in permissions.deny] == ["Bash(rm:*)", "Bash(curl:*)"]
    assert permissions.mode == "plan", "a project may narrow the mode"
    assert runtime.trust is not None and runtime.trust.how == "setting"


def test_an_untrusted_folder_keeps_its_deny_and_ask_rules_and_grants_nothing(project: Path) -> None:
    settings(
        project / ".piton" / "settings.json",
        {"permissions": {"allow": ["Bash(npm test:*)"], "ask": ["Edit"], "deny": ["Bash(rm:*)"]}},
    )
    runtime = build(project, allowed_tools=["Read"])
    permissions = rules(runtime)
    assert [str(r) for r in permissions.allow] == ["Read"]
    assert ([str(r) for r in permissions.ask], [str(r) for r in permissions.deny]) == (
        ["Edit"],
        ["Bash(rm:*)"],
    )
    [notice] = [n for n in runtime.notices if "not trusted" in n]
    assert ".piton/settings.json: allow Bash(npm test:*)" in notice and "--trust-workspace" in notice


def test_bad_rules_in_settings_are_skipped_with_a_notice_and_bad_flags_refused(project: Path) -> None:
    settings(
        project / ".piton" / "settings.json",
        {"permissions": {"allow": ["Bash(", "Read"], "defaultMode": "yolo"}},
    )
    runtime = build(project)
    assert [str(r) for r in rules(runtime).allow] == [], "the folder is not trusted"
    assert any("Bash(" in n for n in runtime.notices) and any("yolo" in n for n in runtime.notices)
    assert rules(runtime).mode == "default"
    with pytest.raises(SetupError, match="not a permission rule"):
        build(project, allowed_tools=["Bash("])


def test_sandbox_settings_and_added_directories(project: Path, tmp_path: Path) -> None:
    extra = tmp_path / "shared"
    extra.mkdir()
    settings(Path.home() / ".piton" / "settings.json", {"sandbox": {"network": True}})
    settings(project / ".piton" / "settings.json", {"sandbox": {"mode": "read-only"}})
    policy = build(project, add_dirs=[extra]).agent.context.policy
    assert policy is not None
    assert (policy.mode, policy.network, policy.extra_dirs) == ("read-only", True, (extra.resolve(),))
    narrowed = build(project, sandbox="danger-full-access")
    assert narrowed.agent.context.policy is not None
    assert narrowed.agent.context.policy.mode == "read-only"
    assert ".piton/settings.json narrows sandbox.mode to 'read-only' (you chose 'danger-full-access')" in (
        narrowed.notices
    )
    with pytest.raises(SetupError, match="not a directory"):
        build(project, add_dirs=[tmp_path / "missing"])


def test_project_settings_cannot_widen_the_sandbox(project: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    settings(
        project / ".piton" / "settings.local.json",
        {
            "sandbox": {"mode": "danger-full-access", "network": True},
            "permissions": {
                "defaultMode": "bypassPermissions",
                "additionalDirectories": [str(tmp_path / "elsewhere")],
                "allow": ["Read(~/.ssh/**)"],
            },
        },
    )
    runtime = build(project)
    policy = runtime.agent.context.policy
    assert policy is not None
    assert (policy.mode, policy.network, policy.extra_dirs) == ("workspace-write", False, ())
    assert [e for e in policy.read_exceptions if ".ssh" in e] == []
    assert rules(runtime).mode == "default"
    ignored = [n for n in runtime.notices if n.startswith("ignored ")]
    assert len(ignored) == 4 and all("only your own settings (~/.piton, ~/.claude)" in n for n in ignored)
    assert any("sandbox.mode='danger-full-access'" in n and "never widen" in n for n in ignored)


def test_the_users_own_settings_may_widen_it(project: Path) -> None:
    settings(
        Path.home() / ".piton" / "settings.json",
        {"sandbox": {"mode": "danger-full-access"}, "permissions": {"defaultMode": "bypassPermissions"}},
    )
    runtime = build(project)
    assert runtime.agent.context.policy is not None
    assert runtime.agent.context.policy.mode == "danger-full-access"
    assert rules(runtime).mode == "bypassPermissions"
    assert runtime.notices == []


def test_an_allow_rule_for_an_env_file_lets_read_see_it(project: Path) -> None:
    policy = build(project, allowed_tools=["Read(.env)"]).agent.context.policy
    assert policy is not None
    (project / ".env").write_text("X=1\n")
    (project / "sub").mkdir()
    (project / "sub" / ".env").write_text("X=2\n")
    assert policy.check_read(project / ".env") and policy.check_read(project / "sub" / ".env")


def test_large_tool_results_are_stored_with_the_session_and_listed_in_its_log(project: Path) -> None:
    async def flood(_: str) -> str:
        return "row\n" * 100_000

    provider = ScriptedProvider(reply(ToolCall("Dump", {"text": "x"})), reply("ok"))
    runtime = build_runtime(
        RunOptions(cwd=project), provider, parts=Parts(tools=[Probe("Dump", flood, read_only=True)])
    )
    collect(runtime.agent.run("go"))
    runtime.log.close()
    lines = [json.loads(line) for line in runtime.log.path.read_text().splitlines()]
    [handle] = [line for line in lines if line["type"] == "tool_result_handle"]
    assert Path(handle["path"]).parent == SessionStore.session_dir(runtime.log) / "tool-results"
    assert Path(handle["path"]).read_text() == "row\n" * 100_000
    assert {
        "id",
        "tool",
        "created_at",
        "size_bytes",
        "size_chars",
        "schema_version",
        "metadata",
    } <= handle.keys()
    # the preview tells the model to page through the stored file with Read: that must work
    from piton.builtin_tools.read import Read
    from tests.builtin_tools.helpers import call

    page = call(Read(), runtime.agent.context, file_path=handle["path"], offset=50_000, limit=2)
    assert str(page.content).startswith(" 50000\trow\n 50001\trow\n\n(The file continues")


def test_the_todo_list_comes_back_with_a_resumed_session(project: Path) -> None:
    todos = [{"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"}]
    from piton.builtin_tools.todo import TodoWrite

    provider = ScriptedProvider(reply(ToolCall("TodoWrite", {"todos": todos})), reply("ok"))
    first = build_runtime(RunOptions(cwd=project), provider, parts=Parts(tools=[TodoWrite()]))
    collect(first.agent.run("plan"))
    first.log.close()
    resumed = build_runtime(
        RunOptions(cwd=project, resume=first.log.session_id),
        ScriptedProvider(),
        parts=Parts(tools=[TodoWrite()]),
    )
    assert resumed.agent.context.state["todos"] == todos
    assert load_session(first.log.path, first.log.session_id).records["todos"]["todos"] == todos


def test_old_and_oversized_sessions_are_pruned_with_their_files(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    old = store.create(tmp_path, "m")
    (SessionStore.session_dir(old) / "tool-results").mkdir(parents=True)
    (SessionStore.session_dir(old) / "tool-results" / "tr_1.txt").write_text("x" * 1000)
    os.utime(old.path, (0, 0))
    fresh = [store.create(tmp_path, "m") for _ in range(3)]
    (store.root / ".last-prune").unlink()
    assert store.prune() == 1
    assert not old.path.exists() and not SessionStore.session_dir(old).exists()
    assert all(log.path.exists() for log in fresh)
    (store.root / ".last-prune").unlink()
    assert store.prune(max_bytes=1) == 3  # over the size limit: oldest first, until it fits
    assert store.prune(max_bytes=1) == 0  # at most once a day


def test_other_sessions_are_private_but_this_sessions_results_are_readable(project: Path) -> None:
    from piton.core.safety.policy import PolicyError

    other = build(project)
    other.log.close()
    runtime = build(project)
    policy = runtime.agent.context.policy
    assert policy is not None
    with pytest.raises(PolicyError, match="credential"):
        policy.check_read(other.log.path)
    results = SessionStore.session_dir(runtime.log) / "tool-results"
    results.mkdir(parents=True)
    (results / "tr_x.txt").write_text("stored\n")
    assert policy.check_read(results / "tr_x.txt")


def test_context_window_and_compaction_come_from_settings(project: Path) -> None:
    settings(
        project / ".piton" / "settings.json",
        {
            "contextWindow": 150_000,
            "models": {"claude-opus-5-5": {"contextWindow": 300_000, "maxOutputTokens": 16_000}},
            "autoCompactThreshold": 70,
        },
    )
    runtime = build(project)
    agent = runtime.agent
    assert (agent.context_window(), agent.context_limit()) == (150_000, 105_000)
    assert agent.compactor is not None and agent.compactor.settings.enabled
    opus = build(project, model="opus").agent
    assert (opus.context_window(), opus.context_limit()) == (300_000, 210_000)
    assert opus.config.max_output_tokens == 16_000


def test_bad_compaction_settings_are_reported_and_ignored(project: Path) -> None:
    settings(
        project / ".piton" / "settings.json",
        {"autoCompact": False, "autoCompactThreshold": 3, "contextWindow": "big"},
    )
    runtime = build(project)
    agent = runtime.agent
    assert agent.compactor is not None and not agent.compactor.settings.enabled
    assert agent.compactor.settings.threshold == 0.8
    assert agent.context_window() == 1_000_000, "the model table's window"
    assert any("autoCompactThreshold=3" in n for n in runtime.notices)
    assert any("contextWindow='big'" in n for n in runtime.notices)
