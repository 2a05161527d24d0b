"""Installed plugins and known marketplaces on disk: Piton's plugins folder, its records, and Claude
Code's records read as they are.

Piton keeps its own under `~/.piton/plugins/` (never writing into `~/.claude`):
`cache/<marketplace>/<plugin>/<version>/` holds each installed copy, `installed_plugins.json` records
them in Claude Code's version-2 shape (`{"version": 2, "plugins": {"name@marketplace": [{"scope",
"installPath", "version", "installedAt", "gitCommitSha"}]}}`), `known_marketplaces.json` the
marketplaces added (`{name: {"source", "installLocation", "lastUpdated"}}`) and `marketplaces/<name>/`
the clones of git ones. Enabling is `enabledPlugins` in `~/.piton/settings.json`. Claude Code's own
`installed_plugins.json` (version 1 or 2) and `known_marketplaces.json` under its folder
(`$CLAUDE_CONFIG_DIR` when set) are read so that what a user installed there loads here unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from piton.core import records
from piton.core.project.claude_home import claude_home
from piton.core.project.jsonfile import JsonFileError, read_object, write_object

MANIFEST = Path(".claude-plugin") / "plugin.json"
MARKETPLACE = Path(".claude-plugin") / "marketplace.json"
GIT_TIMEOUT_S = 300.0


class StoreError(Exception):
    """What could not be installed, found or written; the message is one line for people."""


@records.record(frozen=True)
class Installed:
    plugin_id: str  # name@marketplace
    path: Path
    version: str
    by: str  # "piton" | "claude code"

    @property
    def name(self) -> str:
        return self.plugin_id.partition("@")[0]


def plugins_dir(home: Path) -> Path:
    return home / ".piton" / "plugins"


def claude_plugins_dir(home: Path, env: Mapping[str, str] | None = None) -> Path:
    return claude_home(home, env) / "plugins"


def user_settings_path(home: Path) -> Path:
    return home / ".piton" / "settings.json"


def load_json(path: Path) -> dict[str, Any]:
    """A JSON object file; an absent one is empty. StoreError for one that cannot be used (it is never
    overwritten then: it may hold what the user wrote)."""
    try:
        return read_object(path)
    except JsonFileError as e:
        raise StoreError(f"{path}: {e}") from e


def write_json(path: Path, data: dict[str, Any]) -> None:
    try:
        write_object(path, data)
    except OSError as e:
        raise StoreError(f"{path}: cannot write it ({e.strerror or e})") from e


def _records(path: Path, by: str) -> list[Installed]:
    try:
        plugins = load_json(path).get("plugins")
    except StoreError:
        return []
    found: list[Installed] = []
    for plugin_id, value in (plugins if isinstance(plugins, dict) else {}).items():
        for entry in value if isinstance(value, list) else [value]:  # version 2: a list per scope
            if isinstance(entry, dict) and isinstance(entry.get("installPath"), str):
                version = entry.get("version")
                found.append(Installed(plugin_id, Path(entry["installPath"]), str(version or ""), by))
                break
    return found


def installed(home: Path, env: Mapping[str, str] | None = None) -> list[Installed]:
    """Piton's installed plugins, then Claude Code's (an id Piton installed too is Piton's copy)."""
    own = _records(plugins_dir(home) / "installed_plugins.json", "piton")
    ids = {i.plugin_id for i in own}
    theirs = _records(claude_plugins_dir(home, env) / "installed_plugins.json", "claude code")
    return own + [i for i in theirs if i.plugin_id not in ids]


def locate(plugin_id: str, home: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """The folder of an installed plugin: from the records, else Claude Code's cache layout
    (`cache/<marketplace>/<plugin>/<version>/`, the newest version)."""
    for entry in installed(home, env):
        if entry.plugin_id == plugin_id and entry.path.is_dir():
            return entry.path
    name, _, market = plugin_id.partition("@")
    if not name or not market or "/" in plugin_id or ".." in plugin_id:
        return None
    folder = claude_plugins_dir(home, env) / "cache" / market / name
    try:
        versions = sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    except OSError:
        return None
    return versions[-1] if versions else None


def set_enabled(home: Path, plugin_id: str, enabled: bool | None) -> None:
    """`enabledPlugins[plugin_id]` in `~/.piton/settings.json` (None removes it), other keys kept."""
    path = user_settings_path(home)
    data = load_json(path)
    table = data.get("enabledPlugins")
    table = dict(table) if isinstance(table, dict) else {}
    if enabled is None:
        table.pop(plugin_id, None)
    else:
        table[plugin_id] = enabled
    data["enabledPlugins"] = table
    write_json(path, data)


def record(home: Path, plugin_id: str, path: Path | None, version: str = "", sha: str = "") -> None:
    """Add (or with `path` None, remove) one plugin in Piton's `installed_plugins.json`."""
    file = plugins_dir(home) / "installed_plugins.json"
    data = load_json(file)
    plugins = data.get("plugins") if isinstance(data.get("plugins"), dict) else {}
    assert isinstance(plugins, dict)
    if path is None:
        plugins.pop(plugin_id, None)
    else:
        now = datetime.now(UTC).isoformat()
        entry = {"scope": "user", "installPath": str(path), "version": version, "installedAt": now}
        plugins[plugin_id] = [{**entry, **({"gitCommitSha": sha} if sha else {})}]
    write_json(file, {"version": 2, "plugins": plugins})


def is_git_url(text: str) -> bool:
    return "://" in text or text.startswith("git@") or text.endswith(".git")


def clone(url: str, dest: Path, ref: str | None = None) -> str:
    """`git clone --depth 1` (no prompt for credentials: a private repository fails, it does not
    hang); returns the commit."""
    branch = ["--branch", ref] if ref else []
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    command = ["git", "clone", "--depth", "1", "--quiet", *branch, "--", url, str(dest)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise StoreError(f"git clone {url}: {e}") from e
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise StoreError(f"git clone {url}: {last}")
    head = subprocess.run(
        ["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return head.stdout.strip()


def copy_tree(source: Path, dest: Path) -> None:
    """`source` copied to `dest` (replacing what was there), without its `.git`."""
    try:
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    except OSError as e:
        raise StoreError(f"cannot copy {source} to {dest} ({e.strerror or e})") from e


def known_marketplaces(home: Path, env: Mapping[str, str] | None = None) -> dict[str, tuple[Path, str]]:
    """Each marketplace by name: its folder and what it was added from (Piton's, then Claude Code's)."""
    found: dict[str, tuple[Path, str]] = {}
    for folder in (claude_plugins_dir(home, env), plugins_dir(home)):  # Piton's win
        try:
            data = load_json(folder / "known_marketplaces.json")
        except StoreError:
            continue
        for name, entry in data.items():
            if isinstance(entry, dict) and isinstance(entry.get("installLocation"), str):
                found[name] = (Path(entry["installLocation"]), json.dumps(entry.get("source", "")))
    return found
