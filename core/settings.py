"""Settings from `~/.piton/settings.json`, `.piton/settings.json` and `.piton/settings.local.json`.

Later files override earlier ones key by key. A file that cannot be read or parsed is skipped with
a warning; it never stops Piton from starting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def user_config_dir() -> Path:
    return Path.home() / ".piton"


def settings_files(cwd: Path) -> list[Path]:
    project = cwd / ".piton"
    return [user_config_dir() / "settings.json", project / "settings.json", project / "settings.local.json"]


@dataclass(slots=True)
class Settings:
    values: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def model(self) -> str | None:
        value = self.values.get("model")
        return value if isinstance(value, str) and value.strip() else None

    @property
    def thinking(self) -> bool | None:
        """`"thinking": false` turns extended thinking off (Claude Code's `alwaysThinkingEnabled` too)."""
        for key in ("thinking", "alwaysThinkingEnabled"):
            value = self.values.get(key)
            if isinstance(value, bool):
                return value
        return None


def load_settings(cwd: Path) -> Settings:
    settings = Settings()
    for path in settings_files(cwd):
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            settings.warnings.append(f"ignored {path}: {e}")
            continue
        if not isinstance(data, dict):
            settings.warnings.append(f"ignored {path}: expected a JSON object")
            continue
        settings.values.update(data)
    return settings
