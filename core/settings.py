"""Settings from `~/.piton/settings.json`, `.piton/settings.json` and `.piton/settings.local.json`.

Later files override earlier ones key by key, except permission rules and added directories, which
add up across files (as Claude Code's do). A file or value that cannot be used is skipped with a
warning; it never stops Piton from starting.
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
    layers: list[dict[str, Any]] = field(default_factory=list)  # one per file read, lowest precedence first
    warnings: list[str] = field(default_factory=list)

    def _last(self, *keys: str) -> Any:
        """The value at `keys` in the last file that sets it."""
        for layer in reversed(self.layers):
            value: Any = layer
            for key in keys:
                value = value.get(key) if isinstance(value, dict) else None
            if value is not None:
                return value
        return None

    def _all(self, *keys: str) -> list[str]:
        """String list items at `keys`, from every file, in precedence order."""
        out: list[str] = []
        for layer in self.layers:
            value: Any = layer
            for key in keys:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, list):
                out += [v for v in value if isinstance(v, str)]
        return out

    @property
    def model(self) -> str | None:
        value = self._last("model")
        return value if isinstance(value, str) and value.strip() else None

    @property
    def thinking(self) -> bool | None:
        """`"thinking": false` turns extended thinking off (Claude Code's `alwaysThinkingEnabled` too)."""
        for key in ("thinking", "alwaysThinkingEnabled"):
            value = self._last(key)
            if isinstance(value, bool):
                return value
        return None

    def rules(self, behavior: str) -> list[str]:
        """Permission rules of one behavior (allow, ask, deny) from every file."""
        return self._all("permissions", behavior)

    @property
    def default_mode(self) -> str | None:
        value = self._last("permissions", "defaultMode")
        return value if isinstance(value, str) else None

    @property
    def additional_directories(self) -> list[str]:
        return self._all("permissions", "additionalDirectories")

    @property
    def sandbox_mode(self) -> str | None:
        value = self._last("sandbox", "mode")
        return value if isinstance(value, str) else None

    @property
    def network(self) -> bool:
        """Network access inside the shell sandbox (`"sandbox": {"network": true}`), off by default."""
        return self._last("sandbox", "network") is True


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
        settings.layers.append(data)
    return settings
