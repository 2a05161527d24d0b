"""What MCP servers add to a typed prompt, the same in the terminal, `-p` and stream-json: a
`/mcp__<server>__<prompt>` line becomes the prompt's messages, `@server:uri` attaches a resource; and
how a session's servers are told to clients (`system/init`, `mcp_status`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from piton.api.messages import MessageStream
    from piton.core.conversation.messages import ContentBlock
    from piton.core.mcp.connection import ServerState
    from piton.core.mcp.manager import McpManager

# Piton's states as Claude Code names them to SDK clients
_CLIENT_STATUS = {
    "connected": "connected",
    "failed": "failed",
    "starting": "pending",
    "needs-auth": "needs-auth",
    "pending": "disabled",  # a project server nobody approved does not start
    "disabled": "disabled",
    "stopped": "failed",
}


def _maybe_prompt(text: str) -> bool:
    """Whether `text` could be an MCP prompt's command, known without loading MCP's modules (most
    turns are not, and the first one should not wait for them)."""
    return text.lstrip().startswith("/mcp__")


def is_prompt_command(text: str) -> bool:
    if not _maybe_prompt(text):
        return False
    from piton.core.mcp.prompts import command_name

    return command_name(text) is not None


async def turn_content(
    manager: McpManager | None,
    text: str,
    content: str | list[ContentBlock],
    warn: Callable[[str], None],
) -> str | list[ContentBlock] | None:
    """The turn `text` makes: an MCP prompt's messages, or `content` with the resources it mentions
    attached. None when no turn goes (`warn` has said why, in one line)."""
    if is_prompt_command(text):
        from piton.core.mcp.prompts import PromptError, expand

        try:
            return await expand(manager, text)
        except PromptError as e:
            warn(str(e))
            return None
    if manager is None or "@" not in text:
        return content
    from piton.builtin_tools.mentions import attach_resources

    return await attach_resources(manager, text, content, warn)


def prompt_commands(manager: McpManager | None) -> list[tuple[str, str, str]]:
    """(name, summary, usage) of each MCP prompt's slash command."""
    if manager is None:
        return []
    return [
        (p.command, f"{(p.description or p.name)[:80]} (MCP prompt, {p.server})", p.usage)
        for p in manager.prompts()
    ]


def client_status(state: ServerState) -> dict[str, Any]:
    """One server as `mcp_status` answers it (Claude Code's shape; secrets such as env and headers
    are left out of its configuration)."""
    config = state.config
    out: dict[str, Any] = {"name": config.name, "status": _CLIENT_STATUS.get(state.status, "failed")}
    if state.server_info is not None and state.status == "connected":
        out["serverInfo"] = {"name": state.server_info[0], "version": state.server_info[1]}
    if state.error:
        out["error"] = state.error
    elif state.status == "pending":
        out["error"] = "a project server nobody approved (trust the folder to start it)"
    if config.transport == "stdio":
        out["config"] = {"type": "stdio", "command": config.command, "args": list(config.args)}
    elif config.transport == "sdk":
        out["config"] = {"type": "sdk", "name": config.url}
    else:
        out["config"] = {"type": config.transport, "url": config.url}
    out["scope"] = {"flag": "dynamic", "settings": "user"}.get(config.scope, config.scope)
    if state.status == "connected":
        out["tools"] = [
            {"name": t.remote_name, "description": t.description, "annotations": {"readOnly": t.read_only}}
            for t in state.tools
        ]
    return out


def init_servers(manager: McpManager | None) -> list[dict[str, str]]:
    """The `mcp_servers` of a `system/init` line: each server's name and status."""
    if manager is None:
        return []
    return [{"name": s.config.name, "status": client_status(s)["status"]} for s in manager.states()]


def follow(stream: MessageStream, manager: McpManager | None) -> None:
    """The `init` message a run's stream makes tells the servers and their prompts as they are."""
    if manager is None:
        return
    stream.mcp_servers = lambda: init_servers(manager)
    stream.mcp_commands = lambda: [name for name, _, _ in prompt_commands(manager)]
