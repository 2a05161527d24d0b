"""Images and PDFs as the model can take them: an image scaled down to what the API reads well
(Pillow), a PDF's text page by page (pypdf). Both read files a project brings, so a decompression bomb
is an error and a PDF that cannot be parsed is one line, never a crash."""

from __future__ import annotations

import io
import re
import warnings

MAX_EDGE = 1568  # pixels on the long side: the API scales larger images down itself, at a cost
MAX_BYTES = 5 * 1024 * 1024  # the API's limit for one image
MAX_PIXELS = 64_000_000  # of a source image; beyond this decoding alone is the attack
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
            if max(width, height) <= MAX_EDGE and len(data) <= MAX_BYTES:
                return data, media_type, ""
            image.seek(0)  # the first frame of an animation
            image.load()
    except (
        UnidentifiedImageError,
        OSError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ) as e:
        raise ImageError(f"the image cannot be decoded ({e})") from e
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
    numbers: list[int] = []
    for part in spec.split(","):
        match = _PAGES.match(part)
        if match is None:
            raise PdfError(f"pages {spec!r}: expected page numbers such as '3', '1-5' or '1,4-6'")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if not 1 <= first <= last <= total:
            raise PdfError(f"pages {spec!r}: the PDF has pages 1 to {total}")
        numbers += [n for n in range(first, last + 1) if n not in numbers]
    if len(numbers) > most:
        raise PdfError(f"pages {spec!r} asks for {len(numbers)} pages; read at most {most} at a time")
    return numbers


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
