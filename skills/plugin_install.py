"""Installing, enabling and removing plugins, and adding marketplaces (`piton plugin …`).

A plugin comes from a local folder (marketplace `local`), a git URL (marketplace `git`), or
`name@marketplace` of a marketplace added before: its `.claude-plugin/marketplace.json` entry's
`source` is `"./path"` inside the marketplace, `{"source": "github", "repo": "owner/repo"}` or
`{"source": "url" | "git", "url": …}` (each with an optional `ref` and `path`). Git is the only
network Piton uses here: `git clone --depth 1`.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from piton.skills.plugin_store import (
    MARKETPLACE,
    Installed,
    StoreError,
    clone,
    copy_tree,
    installed,
    is_git_url,
    known_marketplaces,
    load_json,
    plugins_dir,
    record,
    set_enabled,
    write_json,
)
from piton.skills.plugins import PluginError, read_plugin


def install(spec: str, home: Path, cwd: Path) -> Installed:
    """Copy (or clone) the plugin into Piton's plugins folder, record it, enable it."""
    local = (cwd / Path(spec).expanduser()) if not is_git_url(spec) else None
    with tempfile.TemporaryDirectory(prefix="piton-plugin-") as temp:
        sha = ""
        if local is not None and local.is_dir():
            source, market, hint = local, "local", ""
        elif is_git_url(spec):
            sha = clone(spec, Path(temp) / "clone")
            source, market, hint = Path(temp) / "clone", "git", ""
        elif "@" in spec:
            hint, _, market = spec.rpartition("@")
            source, sha = _from_marketplace(hint, market, home, Path(temp))
        else:
            raise StoreError(f"{spec}: not a folder, a git URL or name@marketplace")
        try:
            plugin = read_plugin(source, plugin_id=f"{hint}@{market}" if hint else "")
        except PluginError as e:
            raise StoreError(str(e)) from e
        plugin_id = f"{plugin.name}@{market}"
        version = plugin.version or (sha[:12] if sha else "unversioned")
        dest = plugins_dir(home) / "cache" / market / plugin.name / _safe(version)
        copy_tree(source, dest)
    record(home, plugin_id, dest, plugin.version, sha)
    set_enabled(home, plugin_id, True)
    return Installed(plugin_id, dest, plugin.version, "piton")


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text) or "unversioned"


def _from_marketplace(name: str, market: str, home: Path, temp: Path) -> tuple[Path, str]:
    where = known_marketplaces(home).get(market)
    if where is None:
        raise StoreError(
            f"no marketplace named {market} (piton plugin marketplace add <path|git-url|owner/repo>)"
        )
    root, _ = where
    entries = read_marketplace(root).get("plugins")
    entry = next((e for e in entries or [] if isinstance(e, dict) and e.get("name") == name), None)
    if entry is None:
        raise StoreError(f"marketplace {market} lists no plugin named {name}")
    source = entry.get("source")
    if isinstance(source, str):
        path = (root / source).resolve()
        if not path.is_relative_to(root.resolve()) or not path.is_dir():
            raise StoreError(f"marketplace {market}: {name}'s source {source!r} is no folder inside it")
        return path, ""
    if not isinstance(source, dict):
        raise StoreError(f"marketplace {market}: {name} has no usable source")
    kind = source.get("source")
    if kind == "github" and isinstance(source.get("repo"), str):
        url = f"https://github.com/{source['repo']}.git"
    elif kind in ("url", "git") and isinstance(source.get("url"), str):
        url = source["url"]
    else:
        raise StoreError(f"marketplace {market}: {name}'s source {kind!r} is not supported (github, url)")
    ref = source.get("ref") if isinstance(source.get("ref"), str) else None
    sha = clone(url, temp / "clone", ref)
    sub = source.get("path")
    return (temp / "clone" / sub if isinstance(sub, str) else temp / "clone"), sha


def read_marketplace(root: Path) -> dict[str, Any]:
    data = load_json(root / MARKETPLACE if root.is_dir() else root)
    if not isinstance(data.get("name"), str) or not isinstance(data.get("plugins"), list):
        raise StoreError(f"{root / MARKETPLACE}: expected {{'name', 'owner', 'plugins': [...]}}")
    return data


def add_marketplace(spec: str, home: Path, cwd: Path) -> tuple[str, Path]:
    """A local folder is read where it is; a git URL or `owner/repo` is cloned under
    `~/.piton/plugins/marketplaces/<name>`."""
    local = cwd / Path(spec).expanduser()
    if not is_git_url(spec) and local.exists():
        root = local.resolve() if local.is_dir() else local.resolve().parent.parent
        name = read_marketplace(root)["name"]
        source: dict[str, str] = {"source": "directory", "path": str(root)}
    else:
        github = spec.count("/") == 1 and not is_git_url(spec)
        url = f"https://github.com/{spec}.git" if github else spec
        source = {"source": "github", "repo": spec} if github else {"source": "git", "url": spec}
        folder = plugins_dir(home) / "marketplaces"
        folder.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(prefix=".clone-", dir=folder))
        try:
            clone(url, temp / "repo")
            name = read_marketplace(temp / "repo")["name"]
            root = folder / _safe(name)
            if root.exists():
                shutil.rmtree(root)
            (temp / "repo").rename(root)
        finally:
            shutil.rmtree(temp, ignore_errors=True)
    file = plugins_dir(home) / "known_marketplaces.json"
    data = load_json(file)
    now = datetime.now(UTC).isoformat()
    data[name] = {"source": source, "installLocation": str(root), "lastUpdated": now}
    write_json(file, data)
    return name, root


def marketplaces(home: Path) -> list[tuple[str, Path, list[str]]]:
    """Each known marketplace, its folder, and the plugins it lists."""
    out = []
    for name, (root, _) in sorted(known_marketplaces(home).items()):
        try:
            listed = [str(p.get("name")) for p in read_marketplace(root)["plugins"] if isinstance(p, dict)]
        except StoreError as e:
            listed = [f"(unreadable: {e})"]
        out.append((name, root, listed))
    return out


def find(name: str, home: Path) -> Installed:
    """An installed plugin by `name@marketplace` or, when only one has it, by `name`."""
    found = [i for i in installed(home) if name in (i.plugin_id, i.name)]
    if len(found) != 1:
        what = "no installed plugin" if not found else "more than one installed plugin"
        raise StoreError(f"{what} named {name} (piton plugin list shows them)")
    return found[0]


def uninstall(name: str, home: Path) -> Installed:
    """Piton's copy and record removed, and its `enabledPlugins` entry; Claude Code's are left to it."""
    plugin = find(name, home)
    if plugin.by != "piton":
        raise StoreError(f"{plugin.plugin_id} was installed by Claude Code: remove it there, or disable it")
    if plugin.path.is_relative_to(plugins_dir(home)):
        shutil.rmtree(plugin.path, ignore_errors=True)
    record(home, plugin.plugin_id, None)
    set_enabled(home, plugin.plugin_id, None)
    return plugin
