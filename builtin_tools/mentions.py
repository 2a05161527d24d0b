"""`@path` mentions in what the user types: the files' content attached to the prompt, read the way
Read reads them (the same policy, and counted as read so an Edit can follow); and `@server:uri`
mentions: an MCP server's resource (`resources/read`), attached like a file, within the same caps."""

from __future__ import annotations

import base64
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from piton.builtin_tools.files import decode, lines_of, looks_binary, open_readable, remember
from piton.builtin_tools.media import ImageError, PdfError, fit_image, pdf_pages
from piton.core.conversation.media import image_type
from piton.core.conversation.messages import Base64ImageSource, ContentBlock, ImageBlock, TextBlock
from piton.core.display import counted
from piton.core.safety.policy import PolicyError
from piton.core.tools import ToolContext

if TYPE_CHECKING:
    from piton.core.mcp.manager import McpManager

_MENTION = re.compile(r"(?<![\w@])@(\S+)")
# `@github:repo://issues/1`: a server's name, then a URI (Claude Code's form)
_RESOURCE = re.compile(r"(?<![\w@])@([A-Za-z0-9_.-]+):(\S+)")
MAX_CHARS = 200_000  # per file; the rest is left out with a note
MAX_IMAGE_BYTES = 5 * 1024 * 1024
PDF_PAGES = 20  # of a mentioned PDF, attached as text


_LISTED = 200  # entries of a mentioned folder


def _is_dir_at(fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def attachment(ctx: ToolContext, mention: str) -> list[ContentBlock] | str:
    """The blocks for one mention, or why it was not attached."""
    found = attached(ctx, mention)
    return found if isinstance(found, str) else found[0]


def attached(ctx: ToolContext, mention: str) -> tuple[list[ContentBlock], str] | str:
    """The blocks for one mention and a line saying what they hold (`Read src/app.py (42 lines)`),
    or why it was not attached."""
    name = mention.rstrip(".,;:!?)")
    try:
        with open_readable(ctx, name) as opened:
            if opened.is_dir:  # its entries, read through the descriptor that was checked
                names = sorted(os.listdir(opened.fd))
                shown = "\n".join(f"{n}/" if _is_dir_at(opened.fd, n) else n for n in names[:_LISTED])
                more = f"\n… {len(names) - _LISTED} more" if len(names) > _LISTED else ""
                listing = f"(The folder {opened.path} holds:)\n{shown or '(nothing)'}{more}"
                return [TextBlock(text=listing)], f"Listed {name} ({counted(len(names), 'entry', 'entries')})"
            path, data, st = opened.path, opened.read(), opened.st
    except (PolicyError, OSError) as e:
        return f"@{mention}: {e}"
    media_type = image_type(data[:16])
    if media_type is not None:
        try:
            data, media_type, _ = fit_image(data, media_type)
        except ImageError as e:
            return f"@{mention}: {e}"
        source = Base64ImageSource(media_type=media_type, data=base64.b64encode(data).decode("ascii"))
        return [
            TextBlock(text=f"(The image {path}:)"),
            ImageBlock(source=source),
        ], f"Attached the image {name}"
    if data.startswith(b"%PDF-"):
        try:
            text, pages, total = pdf_pages(data, None, default=PDF_PAGES, most=PDF_PAGES)
        except PdfError as e:
            return f"@{mention}: {e}"
        remember(ctx, path, st)
        more = (
            f"\n[{total - len(pages)} more pages: Read the file with pages for the rest]"
            if total > len(pages)
            else ""
        )
        read = f"Read {name} ({len(pages)} of {counted(total, 'page')})"
        return [TextBlock(text=f'<file path="{path}">\n{text}{more}\n</file>')], read
    if looks_binary(data[:8192]):
        return f"@{mention} is a binary file"
    text, _ = decode(data)
    remember(ctx, path, st)  # the user showed it to the model: it counts as read
    read = f"Read {name} ({counted(len(lines_of(text)), 'line')})"
    if len(text) > MAX_CHARS:
        read = f"Read the first {MAX_CHARS:,} characters of {name}"
        text = (
            text[:MAX_CHARS]
            + f"\n[... {len(text) - MAX_CHARS:,} more characters: Read the file for the rest]"
        )
    return [TextBlock(text=f'<file path="{path}">\n{text}\n</file>')], read


def attach(
    ctx: ToolContext, prompt: str, warn: Callable[[str], None], tell: Callable[[str], None] | None = None
) -> str | list[ContentBlock]:
    """The prompt as typed, followed by the content of each file it mentions that exists; `warn`
    hears of a mentioned file that could not be attached, `tell` of each one that was."""
    blocks: list[ContentBlock] = []
    seen: set[Path] = set()
    for mention in _MENTION.findall(prompt):
        candidate = (ctx.cwd / mention.rstrip(".,;:!?)")).resolve()
        if candidate in seen or not candidate.exists():
            continue  # an e-mail address or a handle, not a file
        seen.add(candidate)
        found = attached(ctx, mention)
        if isinstance(found, str):
            warn(f"  (not attached: {found})")
            continue
        blocks += found[0]
        if tell is not None:
            tell(found[1])
    return [TextBlock(text=prompt), *blocks] if blocks else prompt


def resource_mentions(prompt: str, servers: list[str]) -> list[tuple[str, str]]:
    """(server, uri) for each `@server:uri` in `prompt` that names a configured server, or that looks
    like a resource (`scheme://` after the colon) of a server that is not configured."""
    found: list[tuple[str, str]] = []
    for server, uri in _RESOURCE.findall(prompt):
        uri = uri.rstrip(".,;:!?)")
        if (server in servers or "://" in uri) and (server, uri) not in found:
            found.append((server, uri))
    return found


def _resource_blocks(server: str, uri: str, contents: list[Any]) -> list[ContentBlock]:
    out: list[ContentBlock] = []
    for item in contents:
        shown = str(getattr(item, "uri", "") or uri)
        text, mime = getattr(item, "text", None), getattr(item, "mime_type", None)
        if isinstance(text, str):
            if len(text) > MAX_CHARS:
                text = text[:MAX_CHARS] + f"\n[... {len(text) - MAX_CHARS:,} more characters not attached]"
            out.append(TextBlock(text=f'<resource server="{server}" uri="{shown}">\n{text}\n</resource>'))
            continue
        blob = str(getattr(item, "blob", "") or "")
        size = len(blob) * 3 // 4
        if mime in ("image/jpeg", "image/png", "image/gif", "image/webp") and size <= MAX_IMAGE_BYTES:
            out.append(TextBlock(text=f"(The image {shown} of the MCP server {server}:)"))
            out.append(ImageBlock(source=Base64ImageSource(media_type=mime, data=blob)))
        else:
            what = "an image over 5 MB" if mime and mime.startswith("image/") else mime or "binary data"
            out.append(
                TextBlock(text=f"[resource {shown} of {server}: {what}, about {size:,} bytes, not shown]")
            )
    return out


async def attach_resources(
    manager: McpManager | None,
    prompt: str,
    content: str | list[ContentBlock],
    warn: Callable[[str], None],
) -> str | list[ContentBlock]:
    """`content` (the prompt, with any files attached) followed by the resources `prompt` mentions as
    `@server:uri`; `warn` hears, in one line each, of an unknown server or a read that failed."""
    from piton.core.mcp.tool import McpCallError

    servers = manager.server_names() if manager is not None else []
    blocks: list[ContentBlock] = []
    for server, uri in resource_mentions(prompt, servers):
        if manager is None or server not in servers:
            warn(f"  (not attached: @{server}:{uri}: no MCP server named {server})")
            continue
        try:
            result = await manager.read_resource(server, uri)
        except McpCallError as e:
            warn(f"  (not attached: @{server}:{uri}: {e})")
            continue
        blocks += _resource_blocks(server, uri, list(result.contents))
    if not blocks:
        return content
    head = [TextBlock(text=content)] if isinstance(content, str) else list(content)
    return [*head, *blocks]
