"""Where `piton mcp add` and `remove` write: Piton's `~/.piton/mcp.json` for the user and local
scopes (`{"mcpServers": …, "projects": {<folder>: {"mcpServers": …}}}`, Claude Code's shape, never
Claude Code's own file) and the project's `.mcp.json` for the project scope."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from piton.core.mcp.config import PROJECT_FILE, piton_mcp_path
from piton.core.project.jsonfile import JsonFileError, read_object, write_object

WriteScope = Literal["local", "user", "project"]
SCOPES: tuple[WriteScope, ...] = ("local", "user", "project")


class StoreError(Exception):
    """A file that cannot be read or written; one line for people."""


def scope_file(scope: WriteScope, cwd: Path, home: Path) -> Path:
    return cwd / PROJECT_FILE if scope == "project" else piton_mcp_path(home)


def _load(path: Path) -> dict[str, Any]:
    try:
        return read_object(path)
    except JsonFileError as e:
        raise StoreError(f"{path}: {e}; fix or remove it first") from e


def _table(data: dict[str, Any], scope: WriteScope, cwd: Path, create: bool) -> dict[str, Any] | None:
    """The `mcpServers` object a scope writes in, inside the file's data."""
    holder: Any = data
    if scope == "local":
        projects = data.setdefault("projects", {}) if create else data.get("projects", {})
        key = os.path.abspath(cwd)
        holder = projects.setdefault(key, {}) if create else projects.get(key)
        if not isinstance(holder, dict):
            return None
    table = holder.setdefault("mcpServers", {}) if create else holder.get("mcpServers")
    return table if isinstance(table, dict) else None


def _write(path: Path, data: dict[str, Any], private: bool) -> None:
    """A project file is shared like the code; the user's file is theirs alone."""
    try:
        write_object(path, data, private=private)
    except OSError as e:
        raise StoreError(f"{path}: cannot write it ({e.strerror or e})") from e


def entries(scope: WriteScope, cwd: Path, home: Path) -> dict[str, Any]:
    table = _table(_load(scope_file(scope, cwd, home)), scope, cwd, create=False)
    return dict(table or {})


def add(scope: WriteScope, name: str, entry: dict[str, Any], cwd: Path, home: Path) -> Path:
    """Add `name`; StoreError when the scope has it already."""
    path = scope_file(scope, cwd, home)
    data = _load(path)
    table = _table(data, scope, cwd, create=True)
    if table is None:
        raise StoreError(f"{path}: not the shape Piton writes; fix it first")
    if name in table:
        raise StoreError(f"MCP server {name} already exists in {scope} scope ({path})")
    table[name] = entry
    _write(path, data, private=scope != "project")
    return path


def remove(scope: WriteScope, name: str, cwd: Path, home: Path) -> Path | None:
    """Remove `name` from one scope; the file it was in, or None if it was not there."""
    path = scope_file(scope, cwd, home)
    data = _load(path)
    table = _table(data, scope, cwd, create=False)
    if table is None or name not in table:
        return None
    del table[name]
    _write(path, data, private=scope != "project")
    return path
