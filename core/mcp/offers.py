"""What a server offers beside its tools: its prompts (which become `/mcp__<server>__<prompt>`
commands) and its resources (which `@server:uri` attaches), listed page by page as the tools are.

The SDK's models are read once here into small frozen records, so the terminal's threads can read
a server's offers without touching the SDK.
"""

from __future__ import annotations

from typing import Any

from piton.core.records import record

MAX_PAGES = 100  # a server that pages forever is cut off
MAX_RESOURCES = 2_000  # only for completion: a server with a million files lists the first ones


@record(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@record(frozen=True)
class PromptInfo:
    """One prompt of one server, as `prompts/list` gave it."""

    server: str
    name: str
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()

    @property
    def command(self) -> str:
        """Its slash command's name, as Claude Code names it: `mcp__<server>__<prompt>`."""
        from piton.core.mcp.tool import normalize

        return f"mcp__{normalize(self.server)}__{normalize(self.name)}"

    @property
    def usage(self) -> str:
        """`<a> [b]`: the arguments it takes, required ones in angle brackets."""
        return " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in self.arguments)


@record(frozen=True)
class ResourceInfo:
    server: str
    uri: str
    name: str = ""
    mime_type: str | None = None


def _prompt(server: str, remote: Any) -> PromptInfo:
    arguments = tuple(
        PromptArgument(a.name, (a.description or "").strip(), bool(a.required))
        for a in (remote.arguments or [])
    )
    return PromptInfo(server, remote.name, (remote.description or "").strip(), arguments)


async def list_prompts(server: str, client: Any) -> tuple[PromptInfo, ...]:
    """Every prompt of a connected server; none when it offers no prompts."""
    if getattr(client.server_capabilities, "prompts", None) is None:
        return ()
    found: list[PromptInfo] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = await client.list_prompts(cursor=cursor)
        found += [_prompt(server, p) for p in page.prompts]
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(found)


async def list_resources(server: str, client: Any) -> tuple[ResourceInfo, ...]:
    """The resources of a connected server (up to `MAX_RESOURCES`), for completion."""
    if getattr(client.server_capabilities, "resources", None) is None:
        return ()
    found: list[ResourceInfo] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = await client.list_resources(cursor=cursor)
        found += [ResourceInfo(server, str(r.uri), r.name or "", r.mime_type) for r in page.resources]
        cursor = page.next_cursor
        if cursor is None or len(found) >= MAX_RESOURCES:
            break
    return tuple(found[:MAX_RESOURCES])
