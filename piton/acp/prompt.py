"""An editor's prompt as the user message. Text is what the user typed; a file the editor links
(`resource_link`) becomes an `@path` mention, attached the way the terminal attaches one (the same
path policy, and counted as read); a selection or buffer the editor embeds (`resource`) is sent as
context beside the words, images as images and PDFs as documents."""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from acp import schema

from piton.core.records import record

if TYPE_CHECKING:
    from piton.core.conversation.messages import ContentBlock

Block = (
    schema.TextContentBlock
    | schema.ImageContentBlock
    | schema.AudioContentBlock
    | schema.ResourceContentBlock
    | schema.EmbeddedResourceContentBlock
)
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


@record
class Prompt:
    """What the session's turn takes: the text (with `@path` mentions) and the blocks that follow it."""

    text: str
    attached: list[ContentBlock]
    skipped: list[str]  # what could not be sent, a line each

    def extra(self, content: str | list[ContentBlock]) -> str | list[ContentBlock]:
        """The turn's content with the attached blocks after it (`Session.turn`'s `extra`)."""
        if not self.attached:
            return content
        from piton.core.conversation.messages import TextBlock

        head = [TextBlock(text=content)] if isinstance(content, str) else list(content)
        return [*(b for b in head if not isinstance(b, TextBlock) or b.text), *self.attached]


def prompt_of(blocks: Sequence[Block], cwd: Path) -> Prompt:
    from piton.core.conversation.messages import TextBlock

    words: list[str] = []
    attached: list[ContentBlock] = []
    skipped: list[str] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            words.append(block.text)
        elif isinstance(block, schema.ResourceContentBlock):
            words.append(_mention(block.uri, cwd))
        elif isinstance(block, schema.ImageContentBlock):
            _image(block.mime_type, block.data, block.uri or "an image", attached, skipped)
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, schema.TextResourceContents):
                attached.append(
                    TextBlock(text=f'<context ref="{resource.uri}">\n{resource.text}\n</context>')
                )
            elif resource.mime_type == "application/pdf":
                attached.append(_pdf(resource.blob, resource.uri))
            else:
                _image(resource.mime_type or "", resource.blob, resource.uri, attached, skipped)
        else:
            skipped.append("audio is not sent to the model: Piton's models do not take it")
    text = "".join(w if not words or i == 0 else _joined(words[i - 1], w) for i, w in enumerate(words))
    return Prompt(text, attached, skipped)


def _joined(before: str, word: str) -> str:
    """A mention needs space around it to be read as one."""
    return word if not before or before[-1].isspace() or word[:1].isspace() else f" {word}"


def _mention(uri: str, cwd: Path) -> str:
    """`@path` for a linked file (relative inside the project); a path with spaces cannot be a
    mention, so the model is told of it instead."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return uri
    path = Path(urllib.parse.unquote(parsed.path))
    shown = path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) else str(path)
    if any(c.isspace() for c in shown):
        return f"(the file {shown})"
    return f"@{shown} "


def _image(mime: str, data: str, what: str, attached: list[ContentBlock], skipped: list[str]) -> None:
    from piton.core.conversation.messages import Base64ImageSource, ImageBlock

    if mime not in IMAGE_TYPES:
        skipped.append(f"{what} was not sent: {mime or 'an unknown type'} is not an image the model reads")
        return
    attached.append(ImageBlock(source=Base64ImageSource(media_type=mime, data=data)))


def _pdf(data: str, uri: str) -> ContentBlock:
    from piton.core.conversation.messages import Base64PDFSource, DocumentBlock

    return DocumentBlock(source=Base64PDFSource(data=data), title=Path(urllib.parse.urlparse(uri).path).name)
