"""WebFetch(url, prompt): a web page read for the model. The page is fetched by Piton itself
(`web_get.py`: checked addresses, same-host redirects), turned into Markdown (HTML, through
markdownify) or text (a PDF, through pypdf), and a small fast model answers `prompt` from it, so the
conversation gets the answer, not the page. Pages are kept for 15 minutes per session.
Permission rules name sites: `WebFetch(domain:docs.python.org)`."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from pydantic import Field

from piton import __version__
from piton.builtin_tools.web_get import FetchError, Page, fetch
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult

CACHE_S = 15 * 60
MAX_CACHE_BYTES = 50 * 1024 * 1024  # of pages kept, per session
MAX_HTML_CHARS = 2_000_000  # of a page's HTML, turned into Markdown
MAX_CONTENT_CHARS = 100_000  # of a page's text, given to the small model
MAX_RAW_CHARS = 20_000  # of a page's text, given to the model itself when no summary can be made
MAX_ANSWER_TOKENS = 2_048
PDF_PAGES = 100  # of a fetched PDF, read for the small model
_STATE = "web_fetch_cache"
_DROPPED = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "head")
_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/x-yaml")


def _prune(cache: dict[str, tuple[float, Page]]) -> None:
    """Drop pages older than the cache keeps them, then the oldest beyond its size."""
    now = time.monotonic()
    for url in [u for u, (at, _) in cache.items() if now - at >= CACHE_S]:
        del cache[url]
    while sum(len(page.body) for _, page in cache.values()) > MAX_CACHE_BYTES:
        del cache[min(cache, key=lambda u: cache[u][0])]


class WebFetchInput(ToolInput):
    url: str = Field(description="The URL to fetch. http:// is upgraded to https:// for public sites.")
    prompt: str = Field(description="What to find out from the page: the question its content answers.")


def _host(url: str) -> str | None:
    try:
        return (urlsplit(url.strip()).hostname or "").lower() or None
    except ValueError:
        return None


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


def html_markdown(html: str) -> str:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(list(_DROPPED)):
        tag.decompose()
    text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    lines = [line.rstrip() for line in text.splitlines()]
    body = "\n".join(line for i, line in enumerate(lines) if line or (i and lines[i - 1]))
    return f"# {title}\n\n{body.strip()}" if title and title not in body[:500] else body.strip()


def page_text(page: Page) -> str:
    """The page's content as text the model reads: Markdown for HTML, the text of a PDF."""
    kind = page.content_type.split(";")[0].strip().lower()
    charset = next(
        (p.split("=", 1)[1].strip(" \"'") for p in page.content_type.split(";")[1:] if "charset=" in p),
        "utf-8",
    )
    if kind == "application/pdf" or page.body.startswith(b"%PDF-"):
        from piton.builtin_tools.media import PdfError, pdf_pages

        try:
            return pdf_pages(page.body, None, default=PDF_PAGES, most=PDF_PAGES)[0]
        except PdfError as e:
            raise FetchError(str(e)) from e
    try:
        text = page.body.decode(charset, errors="replace")
    except LookupError:
        text = page.body.decode("utf-8", errors="replace")
    if kind in ("text/html", "application/xhtml+xml") or (not kind and "<html" in text[:2000].lower()):
        if len(text) > MAX_HTML_CHARS:  # parsing costs seconds a megabyte; the rest would be cut anyway
            return html_markdown(text[:MAX_HTML_CHARS]) + "\n\n[The rest of the page was not read.]"
        return html_markdown(text)
    if kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml")):
        return text
    raise FetchError(f"the content is {kind or 'of no stated type'}, not text, HTML or PDF")


class WebFetch(Tool[WebFetchInput]):
    name = "WebFetch"
    description = (
        "Fetch a web page and answer a question about it: the page is read (HTML as Markdown, PDFs as "
        "text) and a small fast model answers `prompt` from its content, so you get the answer, not the "
        "whole page. Use it for documentation, issues, articles and API references. http:// is upgraded "
        "to https://. A redirect to another host is returned to you: call WebFetch again with the new "
        "URL. Pages are cached for 15 minutes. It cannot log in or run a page's scripts."
    )
    input_model = WebFetchInput
    kind = "other"
    deferred = True  # most turns never go to the web

    def rule_content(self, args: WebFetchInput, ctx: ToolContext) -> str | None:
        host = _host(args.url)
        return f"domain:{host}" if host else None

    def is_read_only(self, args: WebFetchInput, ctx: ToolContext) -> bool:
        return True  # it changes nothing here; plan mode asks about it instead of refusing it

    async def run(self, args: WebFetchInput, ctx: ToolContext) -> ToolResult:
        host = _host(args.url)
        if host is None:
            return ToolResult.error(f"Not a URL: {args.url[:200]}")
        cache: dict[str, tuple[float, Page]] = ctx.state.setdefault(_STATE, {})
        _prune(cache)
        hit = cache.get(args.url)
        if hit is not None and time.monotonic() - hit[0] < CACHE_S:
            page = hit[1]
        else:
            rules = ctx.rule_names

            def allow_private(name: str) -> bool:
                return rules is not None and rules(self.name, f"domain:{name}")

            try:
                page = await fetch(args.url, allow_private=allow_private, user_agent=f"Piton/{__version__}")
            except FetchError as e:
                return ToolResult.error(f"Could not fetch {args.url}: {e}")
            cache[args.url] = (time.monotonic(), page)
        if page.redirect is not None:
            return ToolResult(
                f"{args.url} redirects to another host: {page.redirect}\nTo read it, call WebFetch again "
                "with that URL.",
                summary=f"redirected to {_host(page.redirect)}",
            )
        if page.status >= 400:
            return ToolResult.error(f"{page.url} answered HTTP {page.status}")
        try:  # parsing a big page takes seconds: off the event loop, so Esc still stops the turn
            text = await asyncio.to_thread(page_text, page)
        except FetchError as e:
            return ToolResult.error(f"Could not read {page.url}: {e}")
        if page.truncated:
            text += "\n\n[The page was longer than 10 MB; the rest was not read.]"
        summary = f"Received {_size(len(page.body))} ({page.status})"
        answer = await self._answer(ctx, page.url, text, args.prompt)
        if answer is None:
            cut = text[:MAX_RAW_CHARS]
            more = (
                f"\n\n[{len(text) - MAX_RAW_CHARS:,} more characters not shown]"
                if len(text) > len(cut)
                else ""
            )
            return ToolResult(f"Content of {page.url}:\n\n{cut}{more}", summary=summary)
        return ToolResult(answer, summary=summary)

    async def _answer(self, ctx: ToolContext, url: str, text: str, prompt: str) -> str | None:
        """The small model's answer to `prompt` from the page, or None when none can be had."""
        if ctx.ask_model is None:
            return None
        from piton.core.conversation.events import MessageDone
        from piton.core.conversation.messages import Message
        from piton.core.models import small_fast_model
        from piton.core.providers import ModelRequest, ProviderError

        if len(text) > MAX_CONTENT_CHARS:
            text = text[:MAX_CONTENT_CHARS] + "\n\n[The rest of the page was left out.]"
        request = ModelRequest(
            model=small_fast_model(),
            system=(
                "You read a web page for a coding assistant and answer its question from the page's "
                "content only: precisely, briefly, quoting code, commands, versions and links exactly. "
                "If the page does not answer the question, say so and say what it does contain."
            ),
            messages=[Message.user(f"The content of {url}:\n\n<page>\n{text}\n</page>\n\n{prompt}")],
            thinking=False,
            max_tokens=MAX_ANSWER_TOKENS,
            cache=False,  # read once
        )
        try:
            async for event in ctx.ask_model(request):
                if isinstance(event, MessageDone):
                    return event.message.text.strip() or None
        except ProviderError:
            return None
        return None
