from __future__ import annotations

import json
from pathlib import Path

from piton.core.project.settings import load_settings


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_later_files_override_earlier_ones(project: Path) -> None:
    write(Path.home() / ".piton" / "settings.json", {"model": "haiku", "thinking": True})
    write(project / ".piton" / "settings.json", {"model": "opus"})
    write(project / ".piton" / "settings.local.json", {"thinking": False})
    settings = load_settings(project)
    assert (settings.model, settings.thinking, settings.warnings) == ("opus", False, [])


def test_claude_code_thinking_key_is_understood(project: Path) -> None:
    write(project / ".piton" / "settings.json", {"alwaysThinkingEnabled": False})
    assert load_settings(project).thinking is False


def test_a_broken_file_is_skipped_with_a_warning_naming_it(project: Path) -> None:
    broken = project / ".piton" / "settings.json"
    write(broken, "{not json")
    write(project / ".piton" / "settings.local.json", ["a", "list"])
    write(Path.home() / ".piton" / "settings.json", {"model": "haiku"})
    settings = load_settings(project)
    assert settings.model == "haiku"
    assert len(settings.warnings) == 2
    assert str(broken) in settings.warnings[0]
    assert "expected a JSON object" in settings.warnings[1]


def test_no_files_means_no_settings(project: Path) -> None:
    settings = load_settings(project)
    assert (settings.model, settings.thinking, settings.warnings) == (None, None, [])


SANDBOX = ("sandbox", "mode")
MODE = ("permissions", "defaultMode")


def narrowed(project: Path, keys: tuple[str, str], flag: str | None = None) -> tuple[str, list[str]]:
    from piton.core.project.settings import MODE_STRICTNESS, SANDBOX_STRICTNESS

    settings = load_settings(project)
    order, default = (
        (SANDBOX_STRICTNESS, "workspace-write") if keys == SANDBOX else (MODE_STRICTNESS, "default")
    )
    value = settings.narrowed(keys, order, flag, default)
    settings.narrowed(keys, order, flag, default)  # asked twice, warned once
    return value, settings.warnings


def test_a_project_narrows_the_users_choice_and_never_widens_it(project: Path) -> None:
    user = Path.home() / ".piton" / "settings.json"
    write(user, {"sandbox": {"mode": "read-only"}, "permissions": {"defaultMode": "plan"}})
    write(project / ".piton" / "settings.json", {"sandbox": {"mode": "workspace-write"}})
    write(project / ".piton" / "settings.local.json", {"permissions": {"defaultMode": "acceptEdits"}})
    value, [warning] = narrowed(project, SANDBOX)
    assert value == "read-only"
    assert warning.startswith("ignored sandbox.mode='workspace-write' from .piton/settings.json: a project's")
    value, [warning] = narrowed(project, MODE)
    assert value == "plan" and "defaultMode='acceptEdits' from .piton/settings.local.json" in warning
    assert narrowed(project, SANDBOX, flag="danger-full-access")[0] == "workspace-write", (
        "the project narrows a flag"
    )
    write(user, {})
    assert narrowed(project, MODE) == ("default", [narrowed(project, MODE)[1][0]])


def test_narrowing_the_default_is_silent_and_narrowing_a_choice_is_said(project: Path) -> None:
    write(project / ".piton" / "settings.json", {"sandbox": {"mode": "read-only"}})
    assert narrowed(project, SANDBOX) == ("read-only", [])
    assert narrowed(project, SANDBOX, flag="workspace-write") == (
        "read-only",
        [".piton/settings.json narrows sandbox.mode to 'read-only' (you chose 'workspace-write')"],
    )


def test_the_local_file_overrides_the_shared_one_before_the_users_choice_is_narrowed(project: Path) -> None:
    write(project / ".piton" / "settings.json", {"permissions": {"defaultMode": "plan"}})
    write(project / ".piton" / "settings.local.json", {"permissions": {"defaultMode": "default"}})
    assert narrowed(project, MODE) == ("default", [])


def test_an_unknown_sandbox_mode_is_read_as_the_strictest_naming_file_and_key(project: Path) -> None:
    write(Path.home() / ".piton" / "settings.json", {"sandbox": {"mode": "yolo"}})
    write(project / ".piton" / "settings.json", {"sandbox": {"mode": ["read-only"]}})
    value, warnings = narrowed(project, SANDBOX)
    assert value == "read-only", "never wider than the default, whatever the writer meant"
    assert warnings == [
        "unknown sandbox.mode='yolo' in ~/.piton/settings.json (one of read-only, workspace-write, "
        "danger-full-access): read as 'read-only', the strictest",
        "unknown sandbox.mode=['read-only'] in .piton/settings.json (one of read-only, workspace-write, "
        "danger-full-access): read as 'read-only', the strictest",
    ]
    value, warnings = narrowed(project, SANDBOX, flag="danger-full-access")
    assert value == "read-only" and len(warnings) == 1, "a flag is narrowed too, and that is said once"


def test_an_unknown_permission_mode_is_ignored_naming_file_and_key(project: Path) -> None:
    write(project / ".piton" / "settings.local.json", {"permissions": {"defaultMode": "yolo"}})
    value, [warning] = narrowed(project, MODE)
    assert value == "default"
    assert warning.startswith("unknown permissions.defaultMode='yolo' in .piton/settings.local.json")


def test_trusted_folders_come_from_the_users_file_only(project: Path) -> None:
    write(Path.home() / ".piton" / "settings.json", {"trustedFolders": ["~/work/*", "relative/x", "/srv/ci"]})
    write(project / ".piton" / "settings.json", {"trustedFolders": ["/**"]})
    settings = load_settings(project)
    assert settings.trusted_folders == ["~/work/*", "/srv/ci"]
    assert any("trustedFolders" in w and "from the project's settings" in w for w in settings.warnings)
    assert any("'relative/x'" in w for w in settings.warnings)


DEEP = '{"permissions": {"allow": ' + "[" * 5000 + "]" * 5000 + "}}"  # a RecursionError, once


def test_a_deeply_nested_file_at_any_level_is_skipped_with_one_warning_naming_it(project: Path) -> None:
    files = [
        Path.home() / ".piton" / "settings.json",
        project / ".piton" / "settings.json",
        project / ".piton" / "settings.local.json",
    ]
    for deep in files:
        for path, model in zip(files, ("haiku", "opus", "sonnet"), strict=True):
            write(path, DEEP if path == deep else {"model": model})
        settings = load_settings(project)
        assert settings.warnings == [f"ignored {deep}: it nests deeper than 64 levels"]
        assert settings.model == ("opus" if deep == files[2] else "sonnet"), "the other files still count"
        assert settings.rules("allow") == []


def test_a_huge_value_is_shown_briefly_in_a_warning(project: Path) -> None:
    write(project / ".piton" / "settings.json", {"trustedFolders": ["/x" * 50] * 1_000})
    settings = load_settings(project)
    [warning] = settings.warnings
    assert warning.startswith("ignored trustedFolders=['/x/x/x") and len(warning) < 250


def test_a_missing_additional_directory_from_the_users_file_is_skipped_naming_file_and_key(
    project: Path, tmp_path: Path
) -> None:
    (tmp_path / "shared").mkdir()
    (project / "sub").mkdir()
    write(
        Path.home() / ".piton" / "settings.json",
        {"permissions": {"additionalDirectories": [str(tmp_path / "shared"), "/no/such/dir", "sub", 7]}},
    )
    settings = load_settings(project)
    assert settings.additional_directories == [str(tmp_path / "shared"), "sub"]
    assert settings.additional_directories == [str(tmp_path / "shared"), "sub"]  # and warned once
    assert settings.warnings == [
        "ignored permissions.additionalDirectories entry '/no/such/dir' in ~/.piton/settings.json: "
        "not a directory",
        "ignored permissions.additionalDirectories entry 7 in ~/.piton/settings.json",
    ]
