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
