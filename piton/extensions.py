"""What the settings add to a session beyond rules: the `env` variables, the hooks, the status line
command, and the trust grants those make for a project's own files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from piton.core.hooks.config import HookCommand, parse_hooks
from piton.core.hooks.session import Hooks
from piton.core.project.settings import Settings
from piton.core.project.settings_sources import shown
from piton.core.project.trust import Grant, Trust
from piton.core.safety.programs import Programs

# what the settings' env may not set in Piton's own process: what says where the user's Claude Code
# files are and whether the machine is a sandbox comes from whoever started Piton, never from a file
from piton.starting import apply_user_env as apply_user_env

CO_AUTHOR = "Co-Authored-By: Claude <noreply@anthropic.com>"


def attribution(settings: Settings) -> str:
    """`"includeCoAuthoredBy": true`: the commits the model writes credit it, as Claude Code's do."""
    if not settings.include_co_authored_by:
        return ""
    return (
        "# Commits\n"
        f"When you write a git commit message, end it with a blank line and the trailer `{CO_AUTHOR}`."
    )


def hook_commands(settings: Settings, warnings: list[str]) -> list[HookCommand]:
    found: list[HookCommand] = []
    for path, trusted, value in settings.hook_layers():
        found += parse_hooks(path, trusted, value, warnings, may_opt_out=trusted)
    return found


def grants(
    cwd: Path, settings: Settings, hooks: list[HookCommand], *, strict_mcp: bool = False
) -> list[Grant]:
    """What a project's files would run outside the sandbox: its hooks, its status line, the MCP
    servers its `.mcp.json` and its settings files name (approved one by one: a new server is a new
    grant) and the plugins its settings enable. A server the user's own settings start
    (`enableAllProjectMcpServers`, `enabledMcpjsonServers`), one a file turns off, and every one
    under `--strict-mcp-config` are no grant of the folder's: none waits on its trust."""
    from piton.core.mcp.config import project_servers

    out = [Grant(_where(cwd, h.source), h.grant) for h in hooks if not h.trusted]
    from piton.skills.plugins import plugin_grants

    servers = [] if strict_mcp else project_servers(cwd, settings_tables=settings.project_mcp_servers())
    decided = {*settings.enabled_mcpjson_servers, *settings.disabled_mcpjson_servers}
    if not settings.enable_all_project_mcp_servers:
        out += [Grant(s.grant_where, s.grant_what) for s in servers if s.name not in decided]
    out += plugin_grants(cwd, settings)  # a plugin brings hooks and MCP servers of its own
    line = settings.status_line()
    if line is not None and not line[1]:
        out.append(Grant(_where(cwd, line[0]), f"statusLine: {line[2]['command']}"))
    return out


def make_hooks(
    cwd: Path,
    settings: Settings,
    trust: Trust,
    commands: list[HookCommand],
    *,
    session_id: str,
    transcript_path: str,
    mode: Callable[[], str],
    notices: list[str],
    programs: Programs,
) -> Hooks | None:
    """The session's hooks: the user's, and the project's that the folder's trust covers. They get
    Piton's environment with the settings' `env` (a project's only in a trusted folder), and start
    through `programs` (in a sandbox, unless the user's settings opt one out)."""
    chosen = [h for h in commands if h.trusted or trust.honours(Grant(_where(cwd, h.source), h.grant))]
    if not chosen:
        return None
    listed = settings.env(trusted_only=not trust.trusted)
    if skipped := len(commands) - len(chosen):
        notices.append(f"{skipped} hook(s) of the project's settings do not run: the folder is not trusted")
    return Hooks(
        chosen,
        cwd,
        dict(os.environ),
        programs,
        listed,
        session_id=session_id,
        transcript_path=transcript_path,
        mode=mode,
    )


def status_command(
    cwd: Path, settings: Settings, trust: Trust, warnings: list[str]
) -> tuple[str, bool] | None:
    """The statusLine command to run, if the file that names it may (a project's needs trust), and
    whether it runs sandboxed (only the user's own settings can say `"sandbox": false`)."""
    line = settings.status_line()
    if line is None:
        return None
    path, trusted, value = line
    command = str(value["command"])
    if not (trusted or trust.honours(Grant(_where(cwd, path), f"statusLine: {command}"))):
        return None
    opted_out = value.get("sandbox") is False
    if opted_out and not trusted:
        warnings.append(
            f'statusLine in {shown(path)}: "sandbox": false counts only in your user settings; '
            "it runs sandboxed"
        )
    return command, not (opted_out and trusted)


def _where(cwd: Path, path: Path) -> str:
    for base in (cwd, Path(os.path.realpath(cwd))):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return shown(path)
