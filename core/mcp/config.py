"""Which MCP servers a session has: entries in Claude Code's shapes, read from every place Claude Code
and Piton keep them, `${VAR}` expansion, precedence, and which of the project's servers may start.

Entries: stdio `{"command", "args", "env"}` (`"type": "stdio"` or none), `{"type": "http", "url",
"headers"}` (streamable HTTP), `{"type": "sse", "url", "headers"}` and `{"type": "sdk", "name"}` (a
server that lives in the Agent SDK client driving Piton, reached over the control protocol). Sources,
lowest precedence first for one name: the user's settings files (`mcpServers`), `~/.claude.json` (user
scope), Piton's `~/.piton/mcp.json` (user scope), the project's `.mcp.json` (project scope),
`~/.claude.json`'s and then Piton's `projects[<folder>]` (local scope, as Claude Code ranks local above
project), then `--mcp-config`. With `--strict-mcp-config` only the last count. The `mcpServers` of the
project's own settings files (`.claude/settings.json`, `.piton/settings.json` and their `.local`
variants) rank with `.mcp.json`'s, after them.

`.mcp.json` comes with the code and its stdio servers run outside the sandbox: such a server starts
only when the user approved it (workspace trust, or the user's own `enabledMcpjsonServers` /
`enableAllProjectMcpServers`); `disabledMcpjsonServers` from any file always wins.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Literal

from piton.core.project.claude_home import named_config_dir
from piton.core.project.jsonfile import JsonFileError, parse, read
from piton.core.records import record

Transport = Literal["stdio", "http", "sse", "sdk"]
Scope = Literal["settings", "user", "project", "local", "flag"]
PROJECT_FILE = ".mcp.json"
CLAUDE_JSON_MAX_BYTES = 50_000_000  # Claude Code keeps per-project history there: it grows
_TRANSPORTS: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
    "sse": "sse",
    "sdk": "sdk",
}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(Exception):
    """A `--mcp-config` value that cannot be used: the user named it, so the run does not start."""


@record(frozen=True)
class ServerConfig:
    """One configured server, its values expanded; `raw` is the entry as written (shown by
    `piton mcp get`, and what an approval of a project server is given for)."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    scope: Scope = "user"
    source: str = ""  # the file it came from, or "--mcp-config"
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    where: str = ""  # a project server's file, relative to the project (`.mcp.json` when empty)
    may_opt_out: bool = True  # its `"sandbox": false` counts (the user's own entry, not a plugin's)

    @property
    def target(self) -> str:
        """What it runs or reaches, for people: the command line, or the URL."""
        if self.transport == "stdio":
            return shlex.join([self.command, *self.args])
        if self.transport == "sdk":
            return "in-process server of the SDK client"
        return self.url

    @property
    def users_own(self) -> bool:
        """An entry of the user's own configuration, whose `"sandbox": false` counts."""
        return self.may_opt_out and self.scope != "project"

    @property
    def always_load(self) -> bool:
        """Claude Code's `alwaysLoad: true`: its tools are sent up front even with tool search on."""
        return self.raw.get("alwaysLoad") is True

    @property
    def grant_where(self) -> str:
        return self.where or PROJECT_FILE

    @property
    def grant_what(self) -> str:
        """What approving this project server allows, from the entry as written (never expanded
        secrets): a changed command, argument, environment or URL is a new grant."""
        raw = self.raw
        if self.transport == "stdio":
            words = [str(raw.get("command", "")), *map(str, raw.get("args") or [])]
            text = f"mcp server {self.name}: {shlex.join(words)}"
            env = raw.get("env")
            if isinstance(env, dict) and env:
                text += " (env " + ", ".join(f"{k}={v}" for k, v in sorted(env.items())) + ")"
            return text
        return f"mcp server {self.name}: {self.transport} {raw.get('url') or raw.get('name', '')}"


@record
class Found:
    """Every entry found, lowest precedence first, and what could not be used."""

    servers: list[ServerConfig] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def project(self) -> list[ServerConfig]:
        return [s for s in self.servers if s.scope == "project"]


@record
class Selection:
    """The servers to start, and the ones that may not (yet)."""

    active: list[ServerConfig] = field(default_factory=list)
    pending: list[ServerConfig] = field(default_factory=list)  # project servers nobody approved
    disabled: list[ServerConfig] = field(default_factory=list)


def expand(text: str, env: Mapping[str, str], missing: set[str]) -> str:
    """`${VAR}` and `${VAR:-default}` from `env`; an unset variable without a default stays as
    written (as in Claude Code) and is added to `missing`."""

    def one(m: re.Match[str]) -> str:
        value = env.get(m.group(1))
        if value is not None and (value or m.group(2) is None):
            return value
        if m.group(2) is not None:
            return m.group(2)
        missing.add(m.group(1))
        return m.group(0)

    return _VAR.sub(one, text)


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f'"{what}" is not an object')
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise ValueError(f'"{what}.{k}" is not a string')
        out[str(k)] = str(v)
    return out


def _transport(entry: dict[str, Any]) -> Transport:
    kind = entry.get("type")
    if kind is None:
        return "http" if "url" in entry and "command" not in entry else "stdio"
    if not isinstance(kind, str) or kind not in _TRANSPORTS:
        raise ValueError(f'unknown "type" {kind!r} (stdio, http, sse or sdk)')
    return _TRANSPORTS[kind]


def parse_entry(
    name: str, entry: Any, *, scope: Scope, source: str, env: Mapping[str, str]
) -> tuple[ServerConfig, list[str]]:
    """One entry, expanded, and the variables it names that are not set. ValueError says why an
    entry cannot be used."""
    if not isinstance(entry, dict):
        raise ValueError("not an object")
    if not name.strip():
        raise ValueError("a server needs a name")
    transport = _transport(entry)
    missing: set[str] = set()
    if transport == "sdk":  # the client knows it by its own name, which the entry repeats
        sdk_name = entry.get("name", name)
        if not isinstance(sdk_name, str) or not sdk_name.strip():
            raise ValueError('"name" is not a string')
        return ServerConfig(name, transport, url=sdk_name, scope=scope, source=source, raw=entry), []
    if transport == "stdio":
        command, args = entry.get("command"), entry.get("args", [])
        if not isinstance(command, str) or not command.strip():
            raise ValueError('"command" is missing or not a string')
        if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
            raise ValueError('"args" is not a list of strings')
        config = ServerConfig(
            name,
            transport,
            command=expand(command, env, missing),
            args=tuple(expand(str(a), env, missing) for a in args),
            env={k: expand(v, env, missing) for k, v in _strings(entry.get("env"), "env").items()},
            scope=scope,
            source=source,
            raw=entry,
        )
    else:
        url = entry.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ValueError('"url" is missing or not a string')
        url = expand(url.strip(), env, missing)
        if not url.startswith(("http://", "https://")) and not missing:
            raise ValueError(f'"url" {url!r} is not an http(s) URL')
        headers = {k: expand(v, env, missing) for k, v in _strings(entry.get("headers"), "headers").items()}
        config = ServerConfig(
            name, transport, url=url, headers=headers, scope=scope, source=source, raw=entry
        )
    return config, sorted(missing)


def servers_of(
    table: Any,
    *,
    scope: Scope,
    source: str,
    env: Mapping[str, str],
    warnings: list[str],
    where: str = "",
) -> list[ServerConfig]:
    """The entries of one `mcpServers` object; each one that cannot be used is skipped with a
    warning naming the file and the server."""
    if table is None:
        return []
    if not isinstance(table, dict):
        warnings.append(f'{source}: "mcpServers" is not an object; ignored')
        return []
    found = []
    for name, entry in table.items():
        try:
            config, missing = parse_entry(str(name), entry, scope=scope, source=source, env=env)
        except ValueError as e:
            warnings.append(f"{source}: MCP server {name!r} ignored: {e}")
            continue
        if missing:
            names = ", ".join(f"${{{v}}}" for v in missing)
            warnings.append(f"{source}: MCP server {name!r}: {names} not set (kept as written)")
        found.append(replace(config, where=where) if where else config)
    return found


def claude_json_path(home: Path, env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's own configuration file: in `$CLAUDE_CONFIG_DIR` when set, else `~/.claude.json`."""
    folder = named_config_dir(env)
    return (folder if folder is not None else home) / ".claude.json"


def piton_mcp_path(home: Path) -> Path:
    """Where `piton mcp add` keeps user and local servers (never in Claude Code's file)."""
    return home / ".piton" / "mcp.json"


def _read_json(path: Path, warnings: list[str], max_bytes: int = 1_000_000) -> Any:
    try:
        return read(path, max_bytes=max_bytes)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except JsonFileError as e:
        warnings.append(f"{path}: ignored: {e}")
        return None


def _project_entry(data: Any, cwd: Path) -> Any:
    """`projects[<cwd>]` of a `.claude.json`-shaped file, by the folder's path as given or real."""
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return None
    for key in dict.fromkeys((os.path.abspath(cwd), os.path.realpath(cwd))):
        if isinstance(projects.get(key), dict):
            return projects[key].get("mcpServers")
    return None


def flag_servers(
    values: Sequence[str], cwd: Path, env: Mapping[str, str], warnings: list[str]
) -> list[ServerConfig]:
    """The servers of `--mcp-config` values, each a file or inline JSON `{"mcpServers": {…}}`.
    Raises `McpConfigError` for a value that is neither."""
    found: list[ServerConfig] = []
    for value in values:
        text = value.strip()
        try:
            if text.startswith("{"):
                data, source = parse(text), "--mcp-config"
            else:
                path = cwd / Path(os.path.expanduser(text))
                data, source = read(path), str(path)
        except FileNotFoundError:
            raise McpConfigError(f"--mcp-config {value}: no such file") from None
        except JsonFileError as e:
            raise McpConfigError(f"--mcp-config {value[:80]}: {e}") from None
        if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
            raise McpConfigError(f'--mcp-config {value[:80]}: expected {{"mcpServers": {{…}}}}')
        found += servers_of(data["mcpServers"], scope="flag", source=source, env=env, warnings=warnings)
    return found


def project_servers(
    cwd: Path,
    env: Mapping[str, str] | None = None,
    warnings: list[str] | None = None,
    settings_tables: Sequence[tuple[Path, Any]] = (),
) -> list[ServerConfig]:
    """The project's `.mcp.json` servers, then those of its settings files (`settings_tables`: each
    file and its `mcpServers`); each one's `grant_where`/`grant_what` is the workspace-trust grant
    that lets it start."""
    path = cwd / PROJECT_FILE
    sink = warnings if warnings is not None else []
    data = _read_json(path, sink)
    table = data.get("mcpServers") if isinstance(data, dict) else None
    if data is not None and table is None:
        sink.append(f'{path}: no "mcpServers" object; ignored')
    env = os.environ if env is None else env
    found = servers_of(table, scope="project", source=str(path), env=env, warnings=sink)
    for file, entries in settings_tables:
        where = os.path.relpath(file, cwd) if file.is_relative_to(cwd) else str(file)
        found += servers_of(entries, scope="project", source=str(file), env=env, warnings=sink, where=where)
    return found


def load(
    cwd: Path,
    *,
    settings_servers: Mapping[str, Any] | None = None,
    flags: Sequence[str] = (),
    strict: bool = False,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    project_tables: Sequence[tuple[Path, Any]] = (),
    extra: Sequence[ServerConfig] = (),
) -> Found:
    """Every configured server, lowest precedence first. Raises `McpConfigError` for a bad
    `--mcp-config`."""
    env = os.environ if env is None else env
    home = home if home is not None else Path.home()
    found = Found()
    warn = found.warnings
    flagged = flag_servers(flags, cwd, env, warn)
    if strict:
        found.servers = flagged
        return found
    claude_path = claude_json_path(home, env)
    claude = _read_json(claude_path, warn, CLAUDE_JSON_MAX_BYTES)
    piton_path = piton_mcp_path(home)
    piton = _read_json(piton_path, warn)

    def top(data: Any) -> Any:
        return data.get("mcpServers") if isinstance(data, dict) else None

    layers: list[tuple[Any, Scope, str]] = [
        (dict(settings_servers or {}), "settings", "settings"),
        (top(claude), "user", str(claude_path)),
        (top(piton), "user", str(piton_path)),
    ]
    servers = [
        s for t, scope, src in layers for s in servers_of(t, scope=scope, source=src, env=env, warnings=warn)
    ]
    servers += extra  # plugins' servers: the user chose them, with their own files' rank
    servers += project_servers(cwd, env, warn, project_tables)
    for data, path in ((claude, claude_path), (piton, piton_path)):
        servers += servers_of(
            _project_entry(data, cwd), scope="local", source=str(path), env=env, warnings=warn
        )
    found.servers = [*servers, *flagged]
    return found


def select(
    found: Found,
    *,
    approved: Callable[[ServerConfig], bool],
    enable_all: bool = False,
    enabled: Iterable[str] = (),
    disabled: Iterable[str] = (),
) -> Selection:
    """One server per name: the entry of highest precedence that may start. A project server may
    when `disabled` does not name it and `enable_all`, `enabled` or `approved` says so; otherwise
    the next entry of that name is used, if any."""
    enabled_set, disabled_set = set(enabled), set(disabled)
    chosen = Selection()
    by_name: dict[str, list[ServerConfig]] = {}
    for server in found.servers:
        by_name.setdefault(server.name, []).append(server)
    for name, entries in by_name.items():
        blocked: list[ServerConfig] = []
        for server in reversed(entries):
            if server.scope != "project":
                chosen.active.append(server)
                break
            if name in disabled_set:
                chosen.disabled.append(server)
            elif enable_all or name in enabled_set or approved(server):
                chosen.active.append(server)
                break
            else:
                blocked.append(server)
        else:
            chosen.pending += blocked
    return chosen
