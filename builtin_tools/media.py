"""PDFs as the model can take them: the text page by page (pypdf). PDFs come with a project, so one
that cannot be parsed is one line, never a crash. Images are `core.conversation.media`'s: the
terminal scales pasted ones too."""

from __future__ import annotations

import io
import re

from piton.core.conversation.media import ImageError, fit_image

_PAGES = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
__all__ = ["ImageError", "PdfError", "fit_image", "page_numbers", "pdf_pages"]


class PdfError(Exception):
    pass


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


def strict_page_count(data: bytes) -> int | None:
    """How many pages a PDF has, if it parses without any repair and is not encrypted; else None."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data), strict=True)
        return None if reader.is_encrypted else len(reader.pages)
    except (PyPdfError, ValueError, KeyError, TypeError, IndexError, RecursionError, OSError):
        return None


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
