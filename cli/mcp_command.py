"""`piton mcp …`: add, list, inspect and remove MCP servers, with Claude Code's syntax.

    piton mcp add [--transport stdio|http|sse] [--scope local|user|project] [-e KEY=VAL]… [-H "K: v"]…
                  <name> <command or URL> [args…]      (`--` before the server's own options)
    piton mcp add-json [--scope …] <name> '<json>'
    piton mcp list | get <name> | remove [--scope …] <name>

Local and user scopes are written to `~/.piton/mcp.json` (Claude Code's `~/.claude.json` is read,
never written); the project scope to `.mcp.json` in the current folder.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from piton.core.mcp.config import ServerConfig, parse_entry
from piton.core.mcp.store import SCOPES, StoreError, WriteScope, add, remove, scope_file

if TYPE_CHECKING:
    from piton.core.mcp.connection import ServerState
    from piton.core.mcp.manager import McpManager

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_VALUED = ("-t", "--transport", "-s", "--scope", "-e", "--env", "-H", "--header")
_SCOPE_HELP = "local (this folder, you only; default), user (every folder) or project (.mcp.json, shared)"
_STATUS = {
    "connected": "✓ Connected",
    "failed": "✗ Failed",
    "starting": "… Still starting",
    "pending": "⚠ Needs approval (trust this folder)",
    "disabled": "- Disabled",
    "stopped": "- Stopped",
    "needs-auth": "⚠ Needs authentication",
}


class UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="piton mcp", description="Configure and inspect MCP servers.")
    commands = parser.add_subparsers(dest="command", required=True)
    adding = commands.add_parser("add", help="Add a server.")
    adding.add_argument("-t", "--transport", choices=("stdio", "http", "sse"), default="stdio")
    adding.add_argument("-s", "--scope", choices=SCOPES, default="local", help=_SCOPE_HELP)
    adding.add_argument("-e", "--env", action="append", default=[], help="KEY=value for a stdio server")
    adding.add_argument("-H", "--header", action="append", default=[], help='"Name: value" for http/sse')
    adding.add_argument("name")
    adding.add_argument("target", nargs="*", help="the command and its arguments, or the URL")
    as_json = commands.add_parser("add-json", help="Add a server from its JSON entry.")
    as_json.add_argument("-s", "--scope", choices=SCOPES, default="local", help=_SCOPE_HELP)
    as_json.add_argument("name")
    as_json.add_argument("json")
    commands.add_parser("list", help="Every server, and whether it connects.")
    getting = commands.add_parser("get", help="One server's details.")
    getting.add_argument("name")
    removing = commands.add_parser("remove", help="Remove a server.")
    removing.add_argument("-s", "--scope", choices=SCOPES)
    removing.add_argument("name")
    return parser


def main(argv: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    before, dash, after = _split(argv)
    words: list[str] = []
    if before[:1] == ["add"]:
        before, words = _options_first(before)
    try:
        args = _parser().parse_args(before)
    except SystemExit as e:  # argparse has said why
        return int(e.code or 0)
    if args.command == "add":
        args.target = [*args.target, *words, *after]
    elif dash:
        err.write("piton mcp: `--` is only for add\n")
        return 2
    cwd, home = Path.cwd(), Path.home()
    try:
        if args.command == "add":
            return _add(args, cwd, home, out)
        if args.command == "add-json":
            return _add_json(args, cwd, home, out)
        if args.command == "remove":
            return _remove(args.name, args.scope, cwd, home, out)
        return _show(args.name if args.command == "get" else None, cwd, out)
    except (UsageError, StoreError) as e:
        err.write(f"piton mcp: {e}\n")
        return 1


def _split(argv: list[str]) -> tuple[list[str], bool, list[str]]:
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], True, argv[at + 1 :]
    return argv, False, []


def _options_first(argv: list[str]) -> tuple[list[str], list[str]]:
    """`add`'s own options, wherever they are, and the server's command words in order: a word that
    starts with `-` and is not one of add's options belongs to the command (`npx -y pkg`). Without
    `--`, add's options may follow the command (`… <url> -H "K: v"`, as with claude)."""
    ours, theirs, names = [], [], 0
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        option = word.split("=", 1)[0]
        if option in _VALUED or (word[:2] in _VALUED and not word.startswith("--")):
            ours.append(word)
            if word in _VALUED and index < len(argv):  # its value is the next word
                ours.append(argv[index])
                index += 1
        elif names < 2:  # `add` and the server's name
            ours.append(word)
            names += 1
        else:
            theirs.append(word)
    return ours, theirs


def _pairs(items: list[str], sep: str, what: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            raise UsageError(f"{what} {item!r}: expected KEY{sep.strip() or sep}value")
        pairs[key.strip()] = value.strip() if sep == ":" else value
    return pairs


def _check(name: str, entry: dict[str, Any]) -> None:
    if not _NAME.match(name):
        raise UsageError(f"server name {name!r}: use letters, digits, - and _ only")
    try:
        parse_entry(name, entry, scope="user", source="", env={})
    except ValueError as e:
        raise UsageError(f"server {name}: {e}") from e


def _add(args: argparse.Namespace, cwd: Path, home: Path, out: TextIO) -> int:
    if not args.target:
        raise UsageError("add needs the command (or URL) after the name")
    entry: dict[str, Any]
    if args.transport == "stdio":
        if args.header:
            raise UsageError("-H is for http and sse servers")
        entry = {"type": "stdio", "command": args.target[0], "args": args.target[1:]}
        entry["env"] = _pairs(args.env, "=", "-e")
    else:
        if len(args.target) != 1:
            raise UsageError(f"a {args.transport} server takes one URL")
        if args.env:
            raise UsageError("-e is for stdio servers")
        entry = {"type": args.transport, "url": args.target[0]}
        if args.header:
            entry["headers"] = _pairs(args.header, ":", "-H")
    return _write(args.name, entry, args.scope, cwd, home, out)


def _add_json(args: argparse.Namespace, cwd: Path, home: Path, out: TextIO) -> int:
    try:
        entry = json.loads(args.json)
    except json.JSONDecodeError as e:
        raise UsageError(f"not valid JSON: {e}") from e
    if not isinstance(entry, dict):
        raise UsageError("the JSON must be one server's entry, an object")
    return _write(args.name, entry, args.scope, cwd, home, out)


def _write(name: str, entry: dict[str, Any], scope: WriteScope, cwd: Path, home: Path, out: TextIO) -> int:
    _check(name, entry)
    path = add(scope, name, entry, cwd, home)
    out.write(f"Added MCP server {name} to {scope} scope ({path})\n")
    if scope == "project":
        out.write("It starts once each person trusts this folder (it runs outside the sandbox).\n")
    return 0


def _remove(name: str, scope: WriteScope | None, cwd: Path, home: Path, out: TextIO) -> int:
    from piton.core.mcp.store import entries

    scopes = [scope] if scope is not None else [s for s in SCOPES if name in entries(s, cwd, home)]
    if not scopes:
        files = dict.fromkeys(str(scope_file(s, cwd, home)) for s in SCOPES)
        raise UsageError(f"no MCP server {name} in {', '.join(files)}")
    if len(scopes) > 1:
        raise UsageError(
            f"MCP server {name} is in several scopes ({', '.join(scopes)}): say which with --scope"
        )
    path = remove(scopes[0], name, cwd, home)
    if path is None:
        raise UsageError(f"no MCP server {name} in {scopes[0]} scope")
    out.write(f"Removed MCP server {name} from {scopes[0]} scope ({path})\n")
    return 0


def _show(name: str | None, cwd: Path, out: TextIO) -> int:
    """`list` (every server, connected once to see) or `get` (one, in detail)."""
    from piton.core.mcp.manager import McpManager
    from piton.core.options import RunOptions
    from piton.permission_setup import programs_for
    from piton.runtime import SetupError, mcp_selection, run_settings, workspace_trust

    options = RunOptions(cwd=cwd)
    try:
        settings = run_settings(options)
        trust = workspace_trust(options, settings=settings)
        found, chosen = mcp_selection(options, settings, trust)
        programs = programs_for(options, settings, trust)
    except SetupError as e:
        raise UsageError(str(e)) from e
    active = [s for s in chosen.active if name in (None, s.name)]
    pending = [s for s in chosen.pending if name in (None, s.name)]
    disabled = [s for s in chosen.disabled if name in (None, s.name)]
    if name is not None and not (active or pending or disabled):
        raise UsageError(f"no MCP server named {name}")
    if name is None and not found.servers:
        out.write("No MCP servers configured. Add one with: piton mcp add <name> -- <command> [args…]\n")
        return 0
    if active:
        out.write("Checking MCP server health…\n\n")
    for state in _started(McpManager(active, cwd=cwd, pending=pending, disabled=disabled, programs=programs)):
        status = describe_state(state)
        if name is None:
            out.write(f"{state.config.name}: {state.config.target} - {status}\n")
        else:
            out.write(_details(state.config, status, len(state.tools)))
    return 0


def _started(manager: McpManager) -> list[ServerState]:
    """Each server's state once it started (or failed to, within MCP_TIMEOUT); none left running."""
    manager.start()
    try:
        asyncio.run(manager.wait_started())
        return [dataclasses.replace(state) for state in manager.states()]  # as they were, not as closed
    finally:
        manager.close()


def describe_state(state: ServerState) -> str:
    return _STATUS[state.status] + (f": {state.error}" if state.error else "")


def server_health(cwd: Path) -> list[ServerState]:
    """Every MCP server a session here would know of, started once to see (`piton doctor`)."""
    from piton.core.mcp.manager import McpManager
    from piton.core.options import RunOptions
    from piton.permission_setup import programs_for
    from piton.runtime import mcp_selection, run_settings, workspace_trust

    options = RunOptions(cwd=cwd)
    settings = run_settings(options)
    trust = workspace_trust(options, settings=settings)
    found, chosen = mcp_selection(options, settings, trust)
    if not found.servers:
        return []
    programs = programs_for(options, settings, trust)
    return _started(
        McpManager(
            chosen.active, cwd=cwd, pending=chosen.pending, disabled=chosen.disabled, programs=programs
        )
    )


def status_lines(states: list[ServerState]) -> list[tuple[str, str]]:
    """`/mcp`: each server, its status and error, and its tools; (text, style) pairs."""
    if not states:
        return [("No MCP servers. Add one with: piton mcp add <name> -- <command> [args…]", "dim")]
    styles = {
        "connected": "green",
        "failed": "red",
        "pending": "yellow",
        "starting": "yellow",
        "needs-auth": "yellow",
    }
    lines: list[tuple[str, str]] = []
    for state in states:
        config = state.config
        lines.append(
            (
                f"{config.name} ({config.scope}, {config.transport}): {_STATUS[state.status]}",
                styles.get(state.status, "dim"),
            )
        )
        lines.append((f"  {config.target}", "dim"))
        if state.error:
            lines.append((f"  {state.error}", "red"))
        if state.status == "pending":
            lines.append(
                (
                    "  it runs outside the sandbox: trust this folder or list it in enabledMcpjsonServers",
                    "dim",
                )
            )
        if state.tools:
            names = ", ".join(t.remote_name + (" (read-only)" if t.read_only else "") for t in state.tools)
            lines.append((f"  tools: {names}", ""))
        if state.prompts:
            lines.append((f"  prompts: {', '.join('/' + p.command for p in state.prompts)}", ""))
        if state.resources:
            lines.append((f"  resources: {len(state.resources)} (attach one with @{config.name}:<uri>)", ""))
    return lines


def _details(config: ServerConfig, status: str, tools: int) -> str:
    lines = [f"{config.name}:", f"  Scope: {config.scope} ({config.source})", f"  Status: {status}"]
    lines.append(f"  Type: {config.transport}")
    if config.transport == "stdio":
        lines += [f"  Command: {config.command}", f"  Args: {' '.join(config.args)}"]
        lines += ["  Environment:", *(f"    {k}={v}" for k, v in config.env.items())] if config.env else []
    else:
        lines.append(f"  URL: {config.url}")
        lines += (
            ["  Headers:", *(f"    {k}: {v}" for k, v in config.headers.items())] if config.headers else []
        )
    if tools:
        lines.append(f"  Tools: {tools}")
    return "\n".join(lines) + "\n"
