"""WebFetch against a real HTTP server on 127.0.0.1: HTML, a PDF, redirects on and off the host, a
huge page, a slow one, and addresses that only a rule naming the host may open. The page is read by
the small model through the real SDK and the fake API, in the installed `piton -p`."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from piton.builtin_tools.web_fetch import WebFetch, WebFetchInput
from piton.builtin_tools.web_get import FetchError, fetch
from piton.core.tools import ToolContext
from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.fakes.pdf import pdf
from tests.helpers import piton_here

HTML = (
    "<html><head><title>Widget docs</title><style>body{color:red}</style></head><body>"
    "<script>stealCookies()</script><h1>Installing</h1><p>Run <code>pip install widget==3.2</code>.</p>"
    "<ul><li>fast</li><li>small</li></ul></body></html>"
)
HUGE = 11 * 1024 * 1024


class Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        assert isinstance(self.server, ThreadingHTTPServer)
        port = self.server.server_address[1]
        routes = {
            "/docs": (200, "text/html; charset=utf-8", HTML.encode()),
            "/manual.pdf": (200, "application/pdf", pdf(["Widget manual", "Limits: 42 widgets per box"])),
            "/notes.txt": (200, "text/plain", b"plain notes"),
            "/logo.bin": (200, "application/octet-stream", b"\x00\x01\x02"),
            "/missing": (404, "text/html", b"<p>not here</p>"),
        }
        if self.path == "/moved":
            self._redirect("/docs")
        elif self.path == "/elsewhere":
            self._redirect(f"http://localhost:{port}/docs")  # another host name for the same server
        elif self.path == "/metadata":
            self._redirect("http://169.254.169.254/latest/meta-data/")
        elif self.path == "/slow":
            time.sleep(3)
            self._send(200, "text/plain", b"late")
        elif self.path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(HUGE))
            self.end_headers()
            block = b"x" * 65536
            try:
                for _ in range(HUGE // len(block)):
                    self.wfile.write(block)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the reader stopped at its cap
        else:
            self._send(*routes.get(self.path, (404, "text/plain", b"no such page")))

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def context(project: Path, allowed: tuple[str, ...] = ("127.0.0.1",)) -> ToolContext:
    ctx = ToolContext(cwd=project, session_id="s")
    ctx.rule_names = lambda tool, content: tool == "WebFetch" and content.removeprefix("domain:") in allowed
    return ctx


def call(ctx: ToolContext, url: str) -> tuple[str, bool, str]:
    result = asyncio.run(WebFetch().run(WebFetchInput(url=url, prompt="what does it say?"), ctx))
    assert isinstance(result.content, str)
    return result.content, result.is_error, result.summary


def test_html_becomes_markdown_and_a_pdf_its_text(site: str, project: Path) -> None:
    ctx = context(project)  # no model to ask: the page's text itself comes back
    text, error, summary = call(ctx, f"{site}/docs")
    assert not error and summary.startswith("Received") and "(200)" in summary
    assert "# Widget docs" in text and "# Installing" in text and "`pip install widget==3.2`" in text
    assert "- fast" in text and "stealCookies" not in text and "color:red" not in text
    text, error, _ = call(ctx, f"{site}/manual.pdf")
    assert not error and "--- page 2 ---\nLimits: 42 widgets per box" in text
    assert call(ctx, f"{site}/notes.txt")[0].endswith("plain notes")
    text, error, _ = call(ctx, f"{site}/logo.bin")
    assert error and "application/octet-stream, not text" in text
    text, error, _ = call(ctx, f"{site}/missing")
    assert error and "HTTP 404" in text


def test_redirects_stay_on_the_host_and_another_host_goes_back_to_the_model(site: str, project: Path) -> None:
    ctx = context(project)
    text, error, _ = call(ctx, f"{site}/moved")
    assert not error and "# Installing" in text
    text, error, summary = call(ctx, f"{site}/elsewhere")
    assert (
        not error and "redirects to another host: http://localhost:" in text and "call WebFetch again" in text
    )
    assert summary == "redirected to localhost"


def test_a_huge_page_is_cut_and_a_slow_one_is_given_up(site: str, project: Path) -> None:
    page = asyncio.run(fetch(f"{site}/huge", allow_private=lambda host: True, user_agent="t"))
    assert page.truncated and len(page.body) == 10 * 1024 * 1024
    text, error, _ = call(context(project), f"{site}/huge")
    assert not error and text.rstrip().endswith("characters not shown]")
    with pytest.raises(FetchError, match="within 1 s"):
        asyncio.run(fetch(f"{site}/slow", allow_private=lambda host: True, user_agent="t", wait_s=1))
    with pytest.raises(FetchError, match="not an http or https URL"):
        asyncio.run(fetch("file:///etc/passwd", allow_private=lambda host: True, user_agent="t"))


def test_pages_are_kept_for_a_while(site: str, project: Path) -> None:
    ctx = context(project)
    first = call(ctx, f"{site}/docs")
    ctx.rule_names = lambda tool, content: False  # a second fetch would now be refused
    assert call(ctx, f"{site}/docs") == first


def test_the_small_model_reads_the_page_for_the_model(
    fake_api: FakeAnthropicAPI, project: Path, site: str
) -> None:
    fake_api.add(
        reply(ToolCall("WebFetch", {"url": f"{site}/docs", "prompt": "How is it installed?"})),
        reply("With `pip install widget==3.2`."),  # the small model's answer
        reply("Install it with pip install widget==3.2."),
    )
    done = piton_here("-p", "how do I install widget?", "--allowedTools", "WebFetch(domain:127.0.0.1)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Install it with pip install widget==3.2."
    reading = fake_api.bodies[1]
    assert reading["model"] == "claude-haiku-5-5" and "tools" not in reading
    page = json.dumps(reading["messages"])
    assert "# Installing" in page and "How is it installed?" in page and "stealCookies" not in page
    result = fake_api.bodies[2]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error")
    assert json.dumps(result["content"]).count("With `pip install widget==3.2`.") == 1


def test_without_a_rule_print_mode_refuses_and_names_the_rule(
    fake_api: FakeAnthropicAPI, project: Path, site: str
) -> None:
    fake_api.add(reply(ToolCall("WebFetch", {"url": f"{site}/docs", "prompt": "?"})), reply("Could not."))
    done = piton_here("-p", "read it")
    assert done.returncode == 0, done.stderr
    refused = json.dumps(fake_api.bodies[1]["messages"][-1]["content"])
    assert "WebFetch(domain:127.0.0.1)" in refused  # the rule that would allow it, this site only


def test_the_cache_forgets_old_pages_and_stays_bounded() -> None:
    from piton.builtin_tools.web_fetch import CACHE_S, MAX_CACHE_BYTES, _prune
    from piton.builtin_tools.web_get import Page

    now = time.monotonic()
    big = Page("u", 200, "text/plain", b"x" * (MAX_CACHE_BYTES // 2))
    cache = {
        "old": (now - CACHE_S - 1, Page("old", 200, "text/plain", b"x")),
        "a": (now - 30, big),
        "b": (now - 20, big),
        "c": (now - 10, big),
    }
    _prune(cache)
    assert sorted(cache) == ["b", "c"]  # the expired one, then the oldest beyond the size


def test_a_rule_naming_localhost_opens_it(site: str, project: Path) -> None:
    # where localhost names ::1 before 127.0.0.1, the server (on the second only) is reached in turn
    port = site.rsplit(":", 1)[1]
    text, error, _ = call(context(project, allowed=("localhost",)), f"http://localhost:{port}/docs")
    assert not error and "# Installing" in text
