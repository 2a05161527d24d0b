"""Claude Code plugins: which ones a session loads, and what each adds.

A plugin is a folder with an optional `.claude-plugin/plugin.json` (`name`, `version`,
`description`, and `commands`/`agents`/`skills`/`hooks`/`mcpServers` naming further paths, or
holding hooks and servers inline) and the parts in their default places: `commands/*.md`,
`agents/*.md`, `skills/<name>/SKILL.md`, `hooks/hooks.json` and `.mcp.json`. Its commands and skills
are `/plugin-name:command`, its agents the subagent types `plugin-name:agent`, its hooks and MCP
servers join the settings' ones with `${CLAUDE_PLUGIN_ROOT}` standing for the plugin's folder.

Loaded: every `--plugin-dir` (the user's own choice), and each `"name@marketplace": true` of the
settings' `enabledPlugins`, found in Piton's or Claude Code's installed plugins. A plugin runs hooks
and MCP servers outside the sandbox, so one that only a project's settings enable is a workspace-trust
grant: none of it loads until the user trusts the folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from piton.core.project.jsonfile import JsonFileError, read
from piton.core.project.trust import Grant
from piton.core.records import record
from piton.skills.catalog import Catalog, candidates, load, markdown_files
from piton.skills.frontmatter import FrontmatterError, shown
from piton.skills.plugin_store import MANIFEST, locate

if TYPE_CHECKING:
    from piton.core.hooks.config import HookCommand
    from piton.core.mcp.config import ServerConfig
    from piton.core.project.settings import Settings
    from piton.core.project.trust import Trust
    from piton.core.subagents import AgentType

ROOT_VAR = "CLAUDE_PLUGIN_ROOT"


class PluginError(Exception):
    """A plugin folder that cannot be used; the message is one line."""


@record(frozen=True)
class Plugin:
    name: str
    root: Path
    version: str = ""
    description: str = ""
    origin: str = "flag"  # flag (--plugin-dir) | user | project (the settings that enable it)
    plugin_id: str = ""  # name@marketplace; empty for --plugin-dir
    manifest: dict[str, Any] = field(default_factory=dict, compare=False)

    def paths(self, key: str, default: str) -> list[Path]:
        """The default folder (when present) and what the manifest's `key` adds, inside the plugin."""
        out = [self.root / default] if (self.root / default).exists() else []
        value = self.manifest.get(key)
        for item in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            if isinstance(item, str):
                path = (self.root / item).resolve()
                if path.is_relative_to(self.root.resolve()) and path not in out:
                    out.append(path)
        return out

    def expand(self, text: str) -> str:
        return text.replace("${" + ROOT_VAR + "}", str(self.root))


@record
class Plugins:
    """The session's plugins and what they add (filled by `load_plugins`)."""

    plugins: list[Plugin] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # enabled by an untrusted project: not loaded
    hooks: list[HookCommand] = field(default_factory=list)
    servers: list[ServerConfig] = field(default_factory=list)
    agents: list[AgentType] = field(default_factory=list)


def read_plugin(root: Path, origin: str = "flag", plugin_id: str = "") -> Plugin:
    root = Path(os.path.abspath(root))
    if not root.is_dir():
        raise PluginError(f"{root}: no such folder")
    manifest: Any = {}
    try:
        manifest = read(root / MANIFEST)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except JsonFileError as e:
        raise PluginError(f"{root / MANIFEST}: {e}") from e
    if not isinstance(manifest, dict):
        raise PluginError(f"{root / MANIFEST}: expected a JSON object")
    name = manifest.get("name") or plugin_id.partition("@")[0] or root.name
    if not isinstance(name, str) or not name.strip() or any(c in name for c in ":/@ "):
        raise PluginError(f"{root / MANIFEST}: 'name' {name!r} is not a usable plugin name")
    return Plugin(
        name=name,
        root=root,
        version=str(manifest.get("version") or ""),
        description=str(manifest.get("description") or ""),
        origin=origin,
        plugin_id=plugin_id,
        manifest=manifest,
    )


def enabled(settings: Settings) -> dict[str, tuple[Path, bool]]:
    """`enabledPlugins` across the settings files, later files winning: each id set to true, with
    the file that enables it and whether that file is the user's own."""
    state: dict[str, tuple[bool, Path, bool]] = {}
    for layer, trusted, path in zip(settings.layers, settings.trusted, settings._paths(), strict=True):
        table = layer.get("enabledPlugins")
        if table is None:
            continue
        if not isinstance(table, dict):
            settings.warnings.append(
                f'ignored enabledPlugins in {path}: expected {{"name@marketplace": true}}'
            )
            continue
        for plugin_id, value in table.items():
            if isinstance(value, bool):
                state[str(plugin_id)] = (value, path, trusted)
    return {pid: (path, trusted) for pid, (on, path, trusted) in state.items() if on}


def _where(cwd: Path, path: Path) -> str:
    for base in (cwd, Path(os.path.realpath(cwd))):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return str(path)


def plugin_grants(cwd: Path, settings: Settings) -> list[Grant]:
    """What a project's settings would load: each plugin only they enable (it runs hooks and MCP
    servers outside the sandbox)."""
    return [
        Grant(_where(cwd, path), f"plugin {pid} (its hooks, MCP servers, commands and agents)")
        for pid, (path, trusted) in enabled(settings).items()
        if not trusted
    ]


def _chosen(cwd: Path, settings: Settings, trust: Trust | None, home: Path, out: Plugins) -> list[Plugin]:
    found: list[Plugin] = []
    grants = {g.what.split()[1]: g for g in plugin_grants(cwd, settings)}
    for pid, (path, trusted) in enabled(settings).items():
        if not trusted and (trust is None or not trust.honours(grants[pid])):
            out.blocked.append(pid)
            continue
        folder = locate(pid, home)
        if folder is None:
            out.warnings.append(
                f"plugin {pid} is enabled in {path} but not installed (piton plugin install {pid})"
            )
            continue
        try:
            found.append(read_plugin(folder, "user" if trusted else "project", pid))
        except PluginError as e:
            out.warnings.append(f"plugin {pid}: {e}; not loaded")
    return found


def load_plugins(
    cwd: Path,
    settings: Settings,
    trust: Trust | None,
    plugin_dirs: Sequence[Path] = (),
    catalog: Catalog | None = None,
    *,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Plugins:
    """The session's plugins (`--plugin-dir` first: the same name from the settings is then skipped),
    with their hooks, MCP servers and subagent types read, and their skills and commands added to
    `catalog`."""
    out = Plugins()
    candidates: list[Plugin] = []
    for folder in plugin_dirs:
        try:
            candidates.append(read_plugin(folder))
        except PluginError as e:
            out.warnings.append(f"--plugin-dir {e}")
    candidates += _chosen(cwd, settings, trust, home or Path.home(), out)
    for plugin in candidates:
        if any(p.name == plugin.name for p in out.plugins):
            out.warnings.append(
                f"plugin {plugin.name} of {plugin.root} skipped: a plugin of that name is loaded"
            )
            continue
        out.plugins.append(plugin)
    env = os.environ if env is None else env
    for plugin in out.plugins:
        out.hooks += _hooks(plugin, out.warnings)
        out.servers += _servers(plugin, env, out.warnings)
        out.agents += _agents(plugin, out.warnings)
    if _hooks_off(settings):
        out.hooks = []
    if catalog is not None:
        add_plugins(catalog, out.plugins, cwd)
    return out


def _hooks_off(settings: Settings) -> bool:
    """The user's own `"disableAllHooks": true` switches plugins' hooks off too."""
    return any(
        layer.get("disableAllHooks") is True
        for layer, trusted in zip(settings.layers, settings.trusted, strict=True)
        if trusted
    )


def _json_or_inline(plugin: Plugin, key: str, default: str, warnings: list[str]) -> list[tuple[Path, Any]]:
    """The objects a manifest key names: files (the default one first), or the object inline."""
    value = plugin.manifest.get(key)
    if isinstance(value, dict):
        return [(plugin.root / MANIFEST, value)]
    out: list[tuple[Path, Any]] = []
    for path in plugin.paths(key, default):
        try:
            out.append((path, read(path)))
        except (OSError, JsonFileError) as e:
            warnings.append(f"plugin {plugin.name}: {path}: {getattr(e, 'strerror', None) or e}; ignored")
    return out


def _hooks(plugin: Plugin, warnings: list[str]) -> list[HookCommand]:
    from dataclasses import replace

    from piton.core.hooks.config import parse_hooks

    found: list[HookCommand] = []
    for path, data in _json_or_inline(plugin, "hooks", "hooks/hooks.json", warnings):
        table = data.get("hooks", data) if isinstance(data, dict) else None  # hooks.json, or inline events
        if not isinstance(table, dict):
            warnings.append(f'plugin {plugin.name}: {path}: expected {{"hooks": {{…}}}}; ignored')
            continue
        found += [
            replace(h, command=plugin.expand(h.command)) for h in parse_hooks(path, True, table, warnings)
        ]
    return found


def _servers(plugin: Plugin, env: Mapping[str, str], warnings: list[str]) -> list[ServerConfig]:
    """Its MCP servers as `plugin:<plugin>:<server>` (Claude Code's names: their tools are
    `mcp__plugin_<plugin>_<server>__<tool>`)."""
    from piton.core.mcp.config import servers_of

    env = {**env, ROOT_VAR: str(plugin.root)}
    found: list[ServerConfig] = []
    for path, data in _json_or_inline(plugin, "mcpServers", ".mcp.json", warnings):
        table = data.get("mcpServers", data) if isinstance(data, dict) else data
        named = (
            {f"plugin:{plugin.name}:{k}": v for k, v in table.items()} if isinstance(table, dict) else table
        )
        servers = servers_of(named, scope="user", source=str(path), env=env, warnings=warnings)
        found += [replace(s, may_opt_out=False) for s in servers]  # only the user may
    return found


def _agents(plugin: Plugin, warnings: list[str]) -> list[AgentType]:
    from dataclasses import replace

    from piton.skills.agents import load_agent_type
    from piton.skills.frontmatter import FrontmatterError

    found: list[AgentType] = []
    for folder in plugin.paths("agents", "agents"):
        files = sorted(folder.rglob("*.md")) if folder.is_dir() else [folder]
        for path in files:
            try:
                agent = load_agent_type(path, "plugin")
            except (FrontmatterError, OSError) as e:
                warnings.append(f"plugin {plugin.name}: {path}: {e}; skipped")
                continue
            found.append(
                replace(agent, name=f"{plugin.name}:{agent.name}", prompt=plugin.expand(agent.prompt))
            )
    return found


def summary(plugins: Plugins, skills: Sequence[Any] = ()) -> list[str]:
    """A line per loaded plugin and what it added, for /plugin and `piton doctor`."""
    lines = []
    for plugin in plugins.plugins:
        own = [s for s in skills if getattr(s, "plugin_root", None) == plugin.root]
        parts = [
            f"{sum(s.kind == 'command' for s in own)} command(s)",
            f"{sum(s.kind == 'skill' for s in own)} skill(s)",
            f"{sum(a.name.startswith(plugin.name + ':') for a in plugins.agents)} agent(s)",
            f"{sum(h.source.is_relative_to(plugin.root) for h in plugins.hooks)} hook(s)",
            f"{sum(s.name.startswith(f'plugin:{plugin.name}:') for s in plugins.servers)} MCP server(s)",
        ]
        version = f" {plugin.version}" if plugin.version else ""
        origin = plugin.plugin_id or f"--plugin-dir {plugin.root}"
        lines.append(f"{plugin.name}{version} ({origin}): {', '.join(parts)}")
    return lines


def add_plugins(catalog: Catalog, plugins: Iterable[Plugin], cwd: Path | None = None) -> None:
    """Each plugin's skills and commands as `plugin-name:name` (after the project's and the user's,
    which win a clash), `${CLAUDE_PLUGIN_ROOT}` in their text made the plugin's folder. A plugin
    inside the project `cwd` (`--plugin-dir ./my-plugin`) is the project's files, which the model
    may have written: its `allowed-tools` grant nothing."""
    project = Path(os.path.realpath(cwd)) if cwd is not None else None
    for plugin in plugins:
        inside = project is not None and Path(os.path.realpath(plugin.root)).is_relative_to(project)
        found = candidates(plugin.root, catalog.warnings) if plugin.paths("skills", "skills") else []
        found = [c for c in found if c[1] == "skill"]
        for folder in plugin.paths("commands", "commands"):
            files = markdown_files(folder, catalog.warnings) if folder.is_dir() else [folder]
            found += [(path, "command") for path in files]
        for path, kind in found:
            try:
                skill = load(path, kind, "project" if inside else "plugin", catalog.warnings)
            except FrontmatterError as e:
                catalog.warnings.append(f"{shown(path)}: {e}; skipped")
                continue
            name = f"{plugin.name}:{skill.name}"
            if inside and skill.allowed_tools:
                catalog.warnings.append(
                    f"{shown(path)}: allowed-tools not applied: plugin {plugin.name} lies inside the "
                    "project, whose files the model may have written"
                )
            catalog.add(replace(skill, name=name, body=plugin.expand(skill.body), plugin_root=plugin.root))
