"""Images as the Messages API takes them: what kind a file's first bytes say it is (the four formats
it reads), and the image decoded, checked and scaled down to what the API reads well (Pillow, loaded
only when an image is). Images come from projects and clipboards, so one that cannot be decoded, or
a decompression bomb, is an error, never an image block the API would refuse on every later request."""

from __future__ import annotations

import io
import warnings
from typing import Any

MAX_EDGE = 1568  # pixels on the long side: the API scales larger images down itself, at a cost
MAX_BYTES = 5 * 1024 * 1024  # the API's limit for one image
MAX_PIXELS = 64_000_000  # of a source image; beyond this decoding alone is the attack
_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


class ImageError(Exception):
    """The image cannot be sent; the message says why."""


_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(head: bytes) -> str | None:
    """The media type of an image that starts with `head` (16 bytes suffice), or None."""
    for magic, media_type in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def fit_image(data: bytes, media_type: str) -> tuple[bytes, str, str]:
    """The image as it can be sent (bytes, media type) and what was done to it ("" when nothing)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise ImageError(f"a {width}×{height} image is too large to decode")
            image.load()  # all of it: a truncated image must fail here, not at the API
    except (
        UnidentifiedImageError,
        OSError,
        SyntaxError,
        ValueError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ) as e:
        raise ImageError(f"the image cannot be decoded ({e})") from e
    actual = _FORMATS.get(str(image.format))
    if actual is None:
        raise ImageError(f"{image.format} images cannot be sent to the model (PNG, JPEG, GIF or WebP)")
    if max(width, height) <= MAX_EDGE and len(data) <= MAX_BYTES:
        return data, actual, ""  # as it is, with the type its bytes say (not what a name claimed)
    if image.mode.startswith("I") or image.mode == "F":  # 16- or 32-bit samples: to 8 bits, not to white
        extrema: Any = image.getextrema()  # (low, high) for one band
        low, high = float(extrema[0]), float(extrema[1])
        scale = 255 / (high - low) if high > low else 0.0
        image = image.point(lambda v: (v - low) * scale).convert("L")  # type: ignore[assignment]
    image.thumbnail((MAX_EDGE, MAX_EDGE))
    keep_alpha = image.mode in ("RGBA", "LA", "P") and media_type in ("image/png", "image/gif", "image/webp")
    for quality in (85, 70, 50):
        out = io.BytesIO()
        if keep_alpha:
            image.save(out, "PNG", optimize=True)
            kind = "image/png"
        else:
            image.convert("RGB").save(out, "JPEG", quality=quality)
            kind = "image/jpeg"
        if out.tell() <= MAX_BYTES:
            return out.getvalue(), kind, f"scaled from {width}×{height} to {image.width}×{image.height}"
        if keep_alpha:
            keep_alpha = False  # a PNG too large even scaled down: as a JPEG instead
    raise ImageError("the image is over 5 MB even scaled down")
