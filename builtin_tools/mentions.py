"""`@path` mentions in what the user types: the files' content attached to the prompt, read the way
Read reads them (the same policy, and counted as read so an Edit can follow)."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from pathlib import Path

from piton.builtin_tools.files import decode, image_type, looks_binary, open_readable, remember
from piton.core.conversation.messages import Base64ImageSource, ContentBlock, ImageBlock, TextBlock
from piton.core.safety.policy import PolicyError
from piton.core.tools import ToolContext

_MENTION = re.compile(r"(?<![\w@])@(\S+)")
MAX_CHARS = 200_000  # per file; the rest is left out with a note
MAX_IMAGE_BYTES = 5 * 1024 * 1024


def _attachment(ctx: ToolContext, mention: str) -> list[ContentBlock] | str:
    """The blocks for one mention, or why it was not attached."""
    try:
        with open_readable(ctx, mention.rstrip(".,;:!?)")) as opened:
            if opened.is_dir:
                return f"@{mention} is not a file"
            path, data, st = opened.path, opened.read(), opened.st
    except (PolicyError, OSError) as e:
        return f"@{mention}: {e}"
    media_type = image_type(data[:16])
    if media_type is not None:
        if len(data) > MAX_IMAGE_BYTES:
            return f"@{mention} is an image over 5 MB"
        source = Base64ImageSource(media_type=media_type, data=base64.b64encode(data).decode("ascii"))
        return [TextBlock(text=f"(The image {path}:)"), ImageBlock(source=source)]
    if looks_binary(data[:8192]):
        return f"@{mention} is a binary file"
    text, _ = decode(data)
    remember(ctx, path, st)  # the user showed it to the model: it counts as read
    if len(text) > MAX_CHARS:
        text = (
            text[:MAX_CHARS]
            + f"\n[... {len(text) - MAX_CHARS:,} more characters: Read the file for the rest]"
        )
    return [TextBlock(text=f'<file path="{path}">\n{text}\n</file>')]


def attach(ctx: ToolContext, prompt: str, warn: Callable[[str], None]) -> str | list[ContentBlock]:
    """The prompt as typed, followed by the content of each file it mentions that exists; `warn`
    hears of a mentioned file that could not be attached."""
    blocks: list[ContentBlock] = []
    seen: set[Path] = set()
    for mention in _MENTION.findall(prompt):
        candidate = (ctx.cwd / mention.rstrip(".,;:!?)")).resolve()
        if candidate in seen or not candidate.exists():
            continue  # an e-mail address or a handle, not a file
        seen.add(candidate)
        attached = _attachment(ctx, mention)
        if isinstance(attached, str):
            warn(f"  (not attached: {attached})")
        else:
            blocks += attached
    return [TextBlock(text=prompt), *blocks] if blocks else prompt
