"""WebSearch through the installed `piton -p`, the real SDK and the fake API, which streams the server
search tool's blocks as the Messages API does: links and an answer come back, the searches are
counted and paid for, and a provider without the tool is one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from piton.testing.script import HttpError, SearchResults, ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

RELEASE = "https://www.python.org/downloads/release/python-3140/"


def run(project: Path, *args: str) -> dict[str, Any]:
    done = piton_here(
        "-p", "is python 3.14 out?", "--allowedTools", "WebSearch", "--output-format", "json", *args
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def tool_result(body: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = body["messages"][-1]["content"][0]
    assert block["type"] == "tool_result"
    return block


def test_a_search_returns_links_and_an_answer_and_is_counted(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(
        reply(ToolCall("WebSearch", {"query": "python 3.14 release", "allowed_domains": ["python.org"]})),
        reply(
            SearchResults(
                "python 3.14 release", [("Python 3.14.0", RELEASE), ("What's new", RELEASE + "#new")]
            ),
            f"Python 3.14.0 was released in October 2025 ([python.org]({RELEASE})).",
        ),
        reply("Yes: 3.14.0 is out."),
    )
    result = run(project)
    assert result["result"] == "Yes: 3.14.0 is out."
    search = fake_api.bodies[1]
    assert search["model"] == "claude-haiku-5-5"
    assert search["tools"] == [
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 8,
            "allowed_domains": ["python.org"],
        }
    ]
    block = tool_result(fake_api.bodies[2])
    content = block["content"]
    text = content if isinstance(content, str) else "".join(part["text"] for part in content)
    assert not block.get("is_error")
    assert f"- [Python 3.14.0]({RELEASE})\n- [What's new]({RELEASE}#new)" in text
    assert "released in October 2025" in text and "Cite the sources" in text
    assert result["modelUsage"]["claude-haiku-5-5"]["webSearchRequests"] == 1
    assert result["usage"]["server_tool_use"] == {"web_search_requests": 1, "web_fetch_requests": 0}
    haiku_tokens = result["modelUsage"]["claude-haiku-5-5"]["costUSD"]
    assert haiku_tokens >= 0.01  # the search itself is billed, beside the tokens


def test_a_failed_search_and_a_provider_without_the_tool_are_errors(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(
        reply(ToolCall("WebSearch", {"query": "anything"})),
        reply(SearchResults("anything", error="too_many_requests"), "The search failed."),
        reply(ToolCall("WebSearch", {"query": "again"})),
        HttpError(
            400,
            "invalid_request_error",
            "tools.0: Input tag 'web_search_20250305' found using 'type' does not match",
        ),
        reply("No search today."),
    )
    assert run(project)["result"] == "No search today."
    first, second = tool_result(fake_api.bodies[2]), tool_result(fake_api.bodies[4])
    assert first["is_error"] and "The web search failed: too_many_requests" in json.dumps(first["content"])
    assert second["is_error"] and "not available with this provider or model" in json.dumps(second["content"])


def test_allowed_and_blocked_domains_together_are_refused(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply(
            ToolCall(
                "WebSearch", {"query": "x y", "allowed_domains": ["a.com"], "blocked_domains": ["b.com"]}
            )
        ),
        reply("Fine."),
    )
    run(project)
    block = tool_result(fake_api.bodies[1])
    assert block["is_error"] and "not both" in json.dumps(block["content"])
    assert len(fake_api.bodies) == 2  # no search was made
