"""Claude Code's settings files beside Piton's: every level, its precedence, what a project may and
may not do, managed policy, and the keys Piton names because it does not apply them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from piton.core.options import RunOptions
from piton.core.project.settings import load_settings
from piton.runtime import Parts, build_runtime
from piton.testing.scripted import ScriptedProvider

LEVELS = (
    "~/.claude/settings.json",
    "~/.piton/settings.json",
    ".claude/settings.json",
    ".piton/settings.json",
    ".claude/settings.local.json",
    ".piton/settings.local.json",
)


def write(project: Path, where: str, data: dict[str, Any]) -> Path:
    path = Path.home() / where[2:] if where.startswith("~/") else project / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("top", range(len(LEVELS)))
def test_each_level_overrides_the_ones_below_it(project: Path, top: int) -> None:
    for index, where in enumerate(LEVELS[: top + 1]):
        write(project, where, {"model": f"model-{index}"})
    assert load_settings(project).model == f"model-{top}"


def test_flags_beat_every_file_and_managed_policy_beats_the_flags(project: Path, tmp_path: Path) -> None:
    for index, where in enumerate(LEVELS):
        write(project, where, {"model": f"model-{index}"})
    assert load_settings(project, extra='{"model": "from-flag"}').model == "from-flag"
    managed = tmp_path / "managed-settings.json"
    managed.write_text(json.dumps({"model": "company-model", "permissions": {"deny": ["WebFetch"]}}))
    settings = load_settings(project, extra='{"model": "from-flag"}', managed=(managed,))
    assert settings.model == "company-model" and "WebFetch" in settings.rules("deny")


def test_permission_arrays_merge_across_every_level(project: Path) -> None:
    for index, where in enumerate(LEVELS):
        write(project, where, {"permissions": {"deny": [f"Bash(tool{index}:*)"], "ask": [f"Ask{index}"]}})
    settings = load_settings(project)
    assert settings.rules("deny") == [f"Bash(tool{i}:*)" for i in range(len(LEVELS))]
    assert settings.rules("ask") == [f"Ask{i}" for i in range(len(LEVELS))]


def test_claude_config_dir_holds_the_users_claude_code_settings(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "claude-config"
    write(project, "~/.claude/settings.json", {"model": "from-home"})
    (config).mkdir()
    (config / "settings.json").write_text(json.dumps({"model": "from-config-dir"}))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    assert load_settings(project).model == "from-config-dir"


def test_setting_sources_choose_the_levels_read(project: Path) -> None:
    write(project, "~/.claude/settings.json", {"permissions": {"deny": ["A"]}})
    write(project, ".claude/settings.json", {"permissions": {"deny": ["B"]}})
    write(project, ".claude/settings.local.json", {"permissions": {"deny": ["C"]}})
    assert load_settings(project, sources=["user"]).rules("deny") == ["A"]
    assert load_settings(project, sources=["project", "local"]).rules("deny") == ["B", "C"]


def build(project: Path, **options: Any):  # type: ignore[no-untyped-def]
    return build_runtime(RunOptions(cwd=project, **options), ScriptedProvider(), parts=Parts(tools=[]))


def test_user_level_claude_deny_rules_hold_under_bypass_permissions(project: Path) -> None:
    write(project, "~/.claude/settings.json", {"permissions": {"deny": ["Bash(curl:*)"]}})
    write(project, ".claude/settings.json", {"permissions": {"deny": ["Bash(rm:*)"]}})
    permissions = build(project, permission_mode="bypassPermissions").agent.gate.permissions
    assert [str(r) for r in permissions.deny] == ["Bash(curl:*)", "Bash(rm:*)"]
    assert permissions.mode == "bypassPermissions"


def test_an_untrusted_claude_project_file_narrows_and_never_widens(project: Path) -> None:
    write(
        project,
        ".claude/settings.json",
        {
            "permissions": {"allow": ["Bash"], "defaultMode": "bypassPermissions"},
            "sandbox": {"enabled": False},
        },
    )
    runtime = build(project)
    assert runtime.agent.gate.permissions.allow == [] and runtime.agent.gate.permissions.mode == "default"
    assert runtime.agent.context.policy.mode == "workspace-write"
    write(project, ".claude/settings.local.json", {"permissions": {"defaultMode": "plan"}})
    assert build(project).agent.gate.permissions.mode == "plan"


def test_managed_policy_narrows_even_a_flag(project: Path, tmp_path: Path) -> None:
    managed = tmp_path / "managed-settings.json"
    managed.write_text(json.dumps({"permissions": {"defaultMode": "plan"}}))
    settings = load_settings(project, managed=(managed,))
    from piton.core.project.settings import MODE_STRICTNESS

    assert (
        settings.narrowed(("permissions", "defaultMode"), MODE_STRICTNESS, "bypassPermissions", "default")
        == "plan"
    )


def test_disable_bypass_permissions_mode(project: Path) -> None:
    write(project, ".claude/settings.json", {"permissions": {"disableBypassPermissionsMode": "disable"}})
    runtime = build(project, permission_mode="bypassPermissions")
    assert runtime.agent.gate.permissions.mode == "default"
    assert any("disableBypassPermissionsMode" in n for n in runtime.notices)


def test_the_users_sandbox_enabled_false_is_danger_full_access(project: Path) -> None:
    write(project, "~/.claude/settings.json", {"sandbox": {"enabled": False}})
    assert build(project).agent.context.policy.mode == "danger-full-access"


def test_auto_allow_bash_if_sandboxed_allows_commands_but_keeps_deny_rules(project: Path) -> None:
    write(
        project,
        "~/.claude/settings.json",
        {
            "sandbox": {"enabled": True, "autoAllowBashIfSandboxed": True},
            "permissions": {"deny": ["Bash(rm:*)"]},
        },
    )
    from piton.builtin_tools.bash import Bash

    permissions = build(project).agent.gate.permissions
    assert permissions.decide(Bash(), "make test").behavior == "allow"
    assert permissions.decide(Bash(), "rm -rf build").behavior == "deny"
    write(project, ".claude/settings.json", {"sandbox": {"autoAllowBashIfSandboxed": True}})
    os.remove(Path.home() / ".claude" / "settings.json")
    assert build(project).agent.gate.permissions.decide(Bash(), "make test").behavior == "ask"


def test_env_reaches_commands_but_only_the_users_env_reaches_piton(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PITON_TEST_USER_VAR", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL_FROM_PROJECT", raising=False)
    write(project, "~/.claude/settings.json", {"env": {"PITON_TEST_USER_VAR": "1", "IS_SANDBOX": "1"}})
    write(
        project,
        ".claude/settings.json",
        {"env": {"ANTHROPIC_BASE_URL_FROM_PROJECT": "http://evil", "NODE_ENV": "test"}},
    )
    runtime = build(project)
    policy_env = dict(runtime.agent.context.policy.env)
    assert policy_env["NODE_ENV"] == "test" and policy_env["PITON_TEST_USER_VAR"] == "1"
    assert os.environ.get("PITON_TEST_USER_VAR") == "1"
    assert "ANTHROPIC_BASE_URL_FROM_PROJECT" not in os.environ, "a project's env never reaches Piton itself"
    assert "IS_SANDBOX" not in os.environ and any("IS_SANDBOX" in n for n in runtime.notices)
    assert runtime.agent.context.policy.mode == "workspace-write"
    monkeypatch.delenv("PITON_TEST_USER_VAR")


def test_the_users_settings_choose_the_model(project: Path) -> None:
    write(project, "~/.claude/settings.json", {"model": "claude-opus-4-5"})
    assert build(project).agent.config.model == "claude-opus-4-5"


def test_keys_piton_does_not_apply_are_named_once(project: Path) -> None:
    write(
        project,
        "~/.claude/settings.json",
        {"apiKeyHelper": "x", "model": "m", "sandbox": {"network": {"allowedDomains": []}}},
    )
    write(
        project,
        ".claude/settings.json",
        {"outputStyles": ["x"], "permissions": {"allow": [], "weird": 1}},
    )
    runtime = build(project)
    assert runtime.unsupported == [
        "apiKeyHelper (~/.claude/settings.json)",
        "sandbox.network (only true or false) (~/.claude/settings.json)",
        "outputStyles (.claude/settings.json)",
        "permissions.weird (.claude/settings.json)",
    ]


def test_cleanup_period_days_prunes_old_sessions(project: Path) -> None:
    import time

    from piton.core.conversation.session import SessionStore

    store = SessionStore()
    old = store.create(project, "m")
    old.close()
    ten_days_ago = time.time() - 10 * 86_400
    os.utime(old.path, (ten_days_ago, ten_days_ago))
    (store.root / ".last-prune").unlink()
    build(project)
    assert old.path.exists(), "kept for 30 days by default"
    (store.root / ".last-prune").unlink()
    write(project, "~/.claude/settings.json", {"cleanupPeriodDays": 7})
    build(project)
    assert not old.path.exists()


def test_include_co_authored_by_asks_for_the_trailer(project: Path) -> None:
    assert "Co-Authored-By" not in build(project).agent.config.system_prompt
    write(project, "~/.claude/settings.json", {"includeCoAuthoredBy": True})
    assert "Co-Authored-By: Claude <noreply@anthropic.com>" in build(project).agent.config.system_prompt
