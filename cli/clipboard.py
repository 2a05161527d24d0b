"""Ctrl-V: an image on the system clipboard, read with the clipboard program the desktop has, and kept
for the message being typed as `[Image #N]`.

The programs: `wl-paste` under Wayland, `xclip` under X11, `pngpaste` or `osascript` on macOS. Each is
looked up on the user's `PATH`, but never in a relative entry nor inside the folders the tools may
write (the project): a program planted there by a command or the model must not run outside the
sandbox. A program that hangs is cut after a few seconds.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from piton.core.records import record

if TYPE_CHECKING:
    from prompt_toolkit.buffer import Buffer

    from piton.core.conversation.messages import ContentBlock

TIMEOUT_S = 5.0
MAX_SOURCE_BYTES = 50 * 1024 * 1024  # of a pasted image, before it is scaled down
_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_MARKER = re.compile(r"\[Image #(\d+)\]")
_OSASCRIPT_DATA = re.compile(r"«data PNGf([0-9A-Fa-f]+)»")


class ClipboardError(Exception):
    """No image could be read; the message says why, in one line."""


def find_program(name: str, exclude: Sequence[Path], env: Mapping[str, str] | None = None) -> str | None:
    """`name` on PATH, skipping relative entries and any inside `exclude`."""
    import shutil

    env = os.environ if env is None else env
    roots = [root.resolve() for root in exclude]
    for entry in env.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        folder = Path(entry).resolve()
        if any(folder.is_relative_to(root) for root in roots):
            continue
        found = shutil.which(name, path=str(folder))
        if found is not None and not any(Path(found).resolve().is_relative_to(root) for root in roots):
            return found
    return None


def _run(argv: list[str]) -> bytes:
    import subprocess

    try:
        done = subprocess.run(
            argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise ClipboardError(f"{Path(argv[0]).name} did not answer within {TIMEOUT_S:g} s") from e
    except OSError as e:
        raise ClipboardError(f"{Path(argv[0]).name} could not run ({e.strerror or e})") from e
    return done.stdout if done.returncode == 0 else b""


def _offered(listing: bytes) -> str | None:
    types = listing.decode("utf-8", errors="replace").split()
    return next((t for t in _TYPES if t in types), None)


def read_image(exclude: Sequence[Path], env: Mapping[str, str] | None = None) -> bytes:
    """The clipboard's image, as its file's bytes. ClipboardError when there is none or no program
    can read the clipboard here."""
    import platform

    env = os.environ if env is None else env
    tried: list[str] = []
    if env.get("WAYLAND_DISPLAY") and (wl := find_program("wl-paste", exclude, env)):
        tried.append("wl-paste")
        kind = _offered(_run([wl, "--list-types"]))
        if kind is not None:
            return _checked(_run([wl, "--no-newline", "--type", kind]))
    if env.get("DISPLAY") and (xclip := find_program("xclip", exclude, env)):
        tried.append("xclip")
        kind = _offered(_run([xclip, "-selection", "clipboard", "-t", "TARGETS", "-o"]))
        if kind is not None:
            return _checked(_run([xclip, "-selection", "clipboard", "-t", kind, "-o"]))
    if platform.system() == "Darwin":
        if pngpaste := find_program("pngpaste", exclude, env):
            tried.append("pngpaste")
            data = _run([pngpaste, "-"])
            if data:
                return _checked(data)
        elif osascript := find_program("osascript", exclude, env):
            tried.append("osascript")
            found = _OSASCRIPT_DATA.search(_run([osascript, "-e", "the clipboard as «class PNGf»"]).decode())
            if found is not None:
                return _checked(bytes.fromhex(found.group(1)))
    if not tried:
        raise ClipboardError(
            "no clipboard program found (install wl-clipboard or xclip; on macOS, pngpaste); "
            "@path attaches an image file"
        )
    raise ClipboardError("no image on the clipboard")


def _checked(data: bytes) -> bytes:
    """The pasted image decoded, checked and scaled as Read scales images: one the API would refuse
    must not enter the conversation, where every later request would fail on it."""
    from piton.core.conversation.media import ImageError, fit_image, image_type

    media = image_type(data[:16])
    if media is None:
        raise ClipboardError("the clipboard's image is in a format the model does not read")
    if len(data) > MAX_SOURCE_BYTES:
        raise ClipboardError(f"the clipboard's image is over 50 MB ({len(data) / 1e6:.0f} MB)")
    try:
        return fit_image(data, media)[0]
    except ImageError as e:
        raise ClipboardError(f"the clipboard's image: {e}") from e


PASTE_LINES = 10  # a pasted text of more lines stands in the prompt as `[Pasted text #N +M lines]`
_TEXT_MARKER = re.compile(r"\[Pasted text #(\d+) \+\d+ lines\]")


@record(slots=False)
class Pasted:
    """What was pasted in this session: images (Ctrl-V) by the number their `[Image #N]` marker
    shows, and long texts (the terminal's paste) by their `[Pasted text #N +M lines]`."""

    _images: dict[int, bytes] = field(default_factory=dict)
    _texts: dict[int, str] = field(default_factory=dict)

    def text(self, data: str) -> str:
        """What a paste of `data` (its line ends made `\n`) puts in the prompt: the text, or a marker
        for a long one (the message sent holds it whole)."""
        lines = data.count("\n") + (not data.endswith("\n"))
        if lines <= PASTE_LINES:
            return data
        number = len(self._texts) + 1
        self._texts[number] = data
        return f"[Pasted text #{number} +{lines} lines]"

    def expand(self, line: str) -> str:
        """`line` with each marker of a pasted text replaced by the text."""
        return _TEXT_MARKER.sub(lambda m: self._texts.get(int(m[1]), m[0]), line)

    def add(self, data: bytes) -> str:
        number = len(self._images) + 1
        self._images[number] = data
        return f"[Image #{number}]"

    def attach(self, text: str, content: str | list[ContentBlock]) -> str | list[ContentBlock]:
        """`content` (the message and its `@` attachments) followed by each image whose marker the
        text holds, once each, in the order they appear."""
        import base64

        from piton.core.conversation.media import image_type
        from piton.core.conversation.messages import Base64ImageSource, ImageBlock, TextBlock

        blocks: list[ContentBlock] = []
        seen: set[int] = set()
        for match in _MARKER.finditer(text):
            number = int(match.group(1))
            data = self._images.get(number)
            if data is None or number in seen:
                continue
            seen.add(number)
            media = image_type(data[:16])
            assert media is not None  # checked when it was pasted
            source = Base64ImageSource(media_type=media, data=base64.b64encode(data).decode("ascii"))
            blocks += [TextBlock(text=f"(Image #{number}, pasted:)"), ImageBlock(source=source)]
        if not blocks:
            return content
        return [*([TextBlock(text=content)] if isinstance(content, str) else content), *blocks]


async def paste(
    buffer: Buffer, images: Pasted, exclude: Sequence[Path], say: Callable[[str, str], None]
) -> None:
    """Read the clipboard off the event loop and put the image's marker where the cursor is (or say,
    in one line, why there is none)."""
    try:
        data = await asyncio.to_thread(read_image, exclude)
    except ClipboardError as e:
        say(f"Ctrl-V: {e}", "dim")
        return
    before = buffer.document.char_before_cursor
    buffer.insert_text(("" if not before or before.isspace() else " ") + images.add(data) + " ")
