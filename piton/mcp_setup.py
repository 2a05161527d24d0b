"""A session's MCP servers: which of the configured ones may start (the user's own, `--mcp-config`'s,
and those of the project's `.mcp.json` the user approved), started in the background."""

from __future__ import annotations

from typing import TYPE_CHECKING

from piton.core.options import RunOptions
from piton.core.project.settings import Settings
from piton.core.project.trust import Grant, Trust
from piton.setup_errors import SetupError

if TYPE_CHECKING:
    from piton.core.mcp.config import Found, Selection
    from piton.core.mcp.manager import McpManager
    from piton.core.mcp.sdk import SdkHost
    from piton.core.safety.programs import Programs
    from piton.skills.plugins import Plugins


def mcp_selection(
    options: RunOptions, settings: Settings, trust: Trust, plugins: Plugins | None = None
) -> tuple[Found, Selection]:
    """The configured MCP servers and which of them may start: the user's own, `--mcp-config`'s, and
    those of the project's `.mcp.json` the user approved (workspace trust, or the user's
    `enabledMcpjsonServers`); `disabledMcpjsonServers` always wins."""
    from piton.core.mcp.config import McpConfigError, load, select

    try:
        found = load(
            options.cwd,
            settings_servers=getattr(settings, "mcp_servers", None),
            flags=options.mcp_config,
            strict=options.strict_mcp_config,
            project_tables=settings.project_mcp_servers(),
            extra=plugins.servers if plugins is not None else (),
        )
    except McpConfigError as e:
        raise SetupError(str(e)) from e
    chosen = select(
        found,
        approved=lambda server: trust.honours(Grant(server.grant_where, server.grant_what)),
        enable_all=bool(getattr(settings, "enable_all_project_mcp_servers", False)),
        enabled=getattr(settings, "enabled_mcpjson_servers", ()),
        disabled=getattr(settings, "disabled_mcpjson_servers", ()),
    )
    return found, chosen


def mcp_servers(
    options: RunOptions,
    settings: Settings,
    trust: Trust,
    notices: list[str],
    host: SdkHost | None = None,
    plugins: Plugins | None = None,
    programs: Programs | None = None,
) -> McpManager | None:
    """The session's MCP servers, started in the background; None when there are none (the SDK is
    then never imported)."""
    found, chosen = mcp_selection(options, settings, trust, plugins)
    notices += found.warnings
    notices += [
        f"MCP server {s.name} of {s.grant_where} not started: it runs outside the sandbox, so it starts only "
        "once you trust this folder or list it in enabledMcpjsonServers in your settings"
        for s in chosen.pending
    ]
    if not (chosen.active or chosen.pending):
        return None
    from piton.core.mcp.manager import McpManager

    if programs is None:
        from piton.permission_setup import programs_for

        programs = programs_for(options, settings, trust)
    manager = McpManager(
        chosen.active,
        cwd=options.cwd,
        pending=chosen.pending,
        disabled=chosen.disabled,
        host=host,
        programs=programs,
    )
    manager.start()
    return manager
