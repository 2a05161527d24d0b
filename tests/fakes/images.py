"""Real image files made in the test, so that what is pasted or read is a well-formed image."""

from __future__ import annotations

import struct
import zlib


def png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A valid PNG of one colour (8-bit RGB, no interlace)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def encoded(kind: str, width: int = 3, height: int = 2, mode: str = "RGB") -> bytes:
    """An image of `kind` (PNG, JPEG, GIF, WEBP) made with Pillow."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new(mode, (width, height), (10, 120, 200) if mode == "RGB" else (10, 120, 200, 128)).save(out, kind)
    return out.getvalue()
