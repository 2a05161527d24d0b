"""The layers of settings files as read, and how a value is looked up across them (the last file
that sets a key wins; lists add up), for `core/project/settings` and `settings_keys`."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any

from piton.core.project.settings_sources import Scope, Source
from piton.core.records import record


def at(layer: dict[str, Any], keys: tuple[str, ...]) -> Any:
    value: Any = layer
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def brief(value: Any) -> str:
    """A value for a one-line warning: a file can hold a megabyte where a word was expected."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@record
class Layers:
    layers: list[dict[str, Any]] = field(default_factory=list)  # one per file read, lowest precedence first
    # per layer: the user's own file (`trusted_only` reads only it); project files are the others
    trusted: list[bool] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)  # per layer: the file it was read from
    scopes: list[Scope] = field(default_factory=list)  # per layer: its level (user, project, …)
    base: Path | None = None  # the working directory, which relative paths in the files start from

    def add(self, layer: dict[str, Any], source: Source) -> None:
        self.layers.append(layer)
        self.trusted.append(source.trusted)
        self.paths.append(source.path)
        self.scopes.append(source.scope)

    def _last(self, *keys: str, trusted_only: bool = False) -> Any:
        """The value at `keys` in the last file that sets it."""
        for layer, trusted in zip(reversed(self.layers), reversed(self.trusted), strict=True):
            value = at(layer, keys)
            if value is not None and (trusted or not trusted_only):
                return value
        return None

    def _all(self, *keys: str, trusted_only: bool = False) -> list[str]:
        """String list items at `keys`, from every file, in precedence order."""
        out: list[str] = []
        for layer, trusted in zip(self.layers, self.trusted, strict=True):
            value = at(layer, keys)
            if isinstance(value, list) and (trusted or not trusted_only):
                out += [v for v in value if isinstance(v, str)]
        return out

    def _scopes(self) -> list[Scope]:
        return self.scopes if len(self.scopes) == len(self.layers) else ["user"] * len(self.layers)

    def _paths(self) -> list[Path]:
        return self.paths if len(self.paths) == len(self.layers) else [Path("settings")] * len(self.layers)

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)
