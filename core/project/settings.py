"""Settings from `~/.piton/settings.json`, `.piton/settings.json` and `.piton/settings.local.json`.

Later files override earlier ones key by key, except permission rules and added directories, which
add up across files (as Claude Code's do). A file or value that cannot be used is skipped with a
warning; it never stops Piton from starting. Project files come with the code (anyone who can
commit can write them), so what would widen the sandbox is taken from the user's own file only.
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


def _at(layer: dict[str, Any], keys: tuple[str, ...]) -> Any:
    value: Any = layer
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


@dataclass(slots=True)
class Settings:
    layers: list[dict[str, Any]] = field(default_factory=list)  # one per file read, lowest precedence first
    trusted: list[bool] = field(default_factory=list)  # per layer: the user's own file
    warnings: list[str] = field(default_factory=list)

    def _last(self, *keys: str, trusted_only: bool = False) -> Any:
        """The value at `keys` in the last file that sets it."""
        for layer, trusted in zip(reversed(self.layers), reversed(self.trusted), strict=True):
            value = _at(layer, keys)
            if value is not None and (trusted or not trusted_only):
                return value
        return None

    def _all(self, *keys: str, trusted_only: bool = False) -> list[str]:
        """String list items at `keys`, from every file, in precedence order."""
        out: list[str] = []
        for layer, trusted in zip(self.layers, self.trusted, strict=True):
            value = _at(layer, keys)
            if isinstance(value, list) and (trusted or not trusted_only):
                out += [v for v in value if isinstance(v, str)]
        return out

    def _widening(self, keys: tuple[str, ...], widens: Any) -> None:
        """Warn when a project file tries to set `keys` to a value that only the user's file may."""
        for layer, trusted in zip(self.layers, self.trusted, strict=True):
            value = _at(layer, keys)
            if not trusted and value is not None and widens(value):
                self.warnings.append(
                    f"ignored {'.'.join(keys)}={value!r} from the project's settings: only "
                    "~/.piton/settings.json or a command-line flag may widen what the sandbox allows"
                )

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

    def rules(self, behavior: str, *, trusted_only: bool = False) -> list[str]:
        """Permission rules of one behavior (allow, ask, deny) from every file."""
        return self._all("permissions", behavior, trusted_only=trusted_only)

    @property
    def default_mode(self) -> str | None:
        user = self._last("permissions", "defaultMode", trusted_only=True)
        value = self._last("permissions", "defaultMode")
        if value == "bypassPermissions" and user != value:
            value = user
        return value if isinstance(value, str) else None

    @property
    def additional_directories(self) -> list[str]:
        return self._all("permissions", "additionalDirectories", trusted_only=True)

    @property
    def sandbox_mode(self) -> str | None:
        value = self._last("sandbox", "mode")
        if value == "danger-full-access":
            value = self._last("sandbox", "mode", trusted_only=True)
        return value if isinstance(value, str) else None

    @property
    def network(self) -> bool:
        """Network access inside the shell sandbox (`"sandbox": {"network": true}`), off by default."""
        return self._last("sandbox", "network", trusted_only=True) is True

    @property
    def auto_compact(self) -> bool:
        """`"autoCompact": false` turns automatic compaction off (/compact still works)."""
        return self._last("autoCompact") is not False

    @property
    def compact_threshold(self) -> float | None:
        """`"autoCompactThreshold"`: the share of the window at which compaction starts, as a fraction
        (0.7) or a percentage (70); between 10% and 95%."""
        value = self._last("autoCompactThreshold")
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            fraction = value / 100 if value > 1 else float(value)
            if 0.1 <= fraction <= 0.95:
                return fraction
        self.warnings.append(
            f"ignored autoCompactThreshold={value!r}: use a share of the window, 0.1 to 0.95"
        )
        return None

    def model_limits(self, model: str) -> tuple[int | None, int | None]:
        """(context window, output tokens) overrides for `model`: `"models": {"<id>": {"contextWindow":
        N, "maxOutputTokens": N}}`, or a top-level `"contextWindow"` for every model."""
        found: list[int | None] = []
        for key in ("contextWindow", "maxOutputTokens"):
            value = self._last("models", model, key)
            if value is None and key == "contextWindow":
                value = self._last(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1_024):
                self.warnings.append(
                    f"ignored {key}={value!r} for {model}: expected a whole number of tokens"
                )
                value = None
            found.append(value)
        return found[0], found[1]

    def check_project_files(self) -> None:
        """Note each widening value a project file tried to set (they are ignored)."""
        self._widening(("sandbox", "mode"), lambda v: v == "danger-full-access")
        self._widening(("sandbox", "network"), lambda v: v is True)
        self._widening(("permissions", "defaultMode"), lambda v: v == "bypassPermissions")
        self._widening(("permissions", "additionalDirectories"), lambda v: bool(v))


def load_settings(cwd: Path) -> Settings:
    settings = Settings()
    for index, path in enumerate(settings_files(cwd)):
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
        settings.trusted.append(index == 0)
    settings.check_project_files()
    return settings
