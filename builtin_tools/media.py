"""Images and PDFs as the model can take them: an image scaled down to what the API reads well
(Pillow), a PDF's text page by page (pypdf). Both read files a project brings, so a decompression bomb
is an error and a PDF that cannot be parsed is one line, never a crash."""

from __future__ import annotations

import io
import re
import warnings
from typing import Any

MAX_EDGE = 1568  # pixels on the long side: the API scales larger images down itself, at a cost
MAX_BYTES = 5 * 1024 * 1024  # the API's limit for one image
MAX_PIXELS = 64_000_000  # of a source image; beyond this decoding alone is the attack
_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
_PAGES = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


class ImageError(Exception):
    pass


class PdfError(Exception):
    pass


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


def page_numbers(spec: str, total: int, most: int) -> list[int]:
    """`"1-5"`, `"3"` or `"1,4-6"` as page numbers within 1..total. PdfError naming what is wrong."""
    ranges: list[tuple[int, int]] = []
    for part in spec.split(","):
        match = _PAGES.match(part)
        if match is None:
            raise PdfError(f"pages {spec!r}: expected page numbers such as '3', '1-5' or '1,4-6'")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if not 1 <= first <= last <= total:
            raise PdfError(f"pages {spec!r}: the PDF has pages 1 to {total}")
        ranges.append((first, last))
    asked = sum(last - first + 1 for first, last in ranges)
    if asked > most:  # counted before any list is built: "1-100000" costs nothing
        raise PdfError(f"pages {spec!r} asks for {asked} pages; read at most {most} at a time")
    return list(dict.fromkeys(n for first, last in ranges for n in range(first, last + 1)))


def pdf_pages(data: bytes, spec: str | None, *, default: int, most: int) -> tuple[str, list[int], int]:
    """The text of the pages `spec` names (else the first `default`), the page numbers shown, and how
    many pages the PDF has."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfError("the PDF is encrypted with a password")
        total = len(reader.pages)
        numbers = page_numbers(spec, total, most) if spec else list(range(1, min(total, default) + 1))
        parts = []
        for n in numbers:
            text = (reader.pages[n - 1].extract_text() or "").strip()
            parts.append(f"--- page {n} ---\n{text or '(no text on this page: it may be a scanned image)'}")
    except PdfError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, IndexError, RecursionError, OSError) as e:
        raise PdfError(f"the PDF cannot be read ({type(e).__name__}: {e})") from e
    return "\n\n".join(parts) or "(the PDF has no pages)", numbers, total
