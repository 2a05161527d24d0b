"""ToolSearch over the built-in deferred tools: Claude Code's query forms, references as its result,
and the list of deferred tools its description gives the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from piton.builtin_tools import builtin_tools
from piton.builtin_tools.tool_search import ToolSearch, listing, search, words
from piton.core.conversation.messages import ToolReferenceBlock
from piton.core.deferral import DeferredTools, ToolSearchMode
from piton.core.tools import ToolRegistry
from tests.builtin_tools.helpers import call, context, text


def catalog() -> DeferredTools:
    registry = ToolRegistry(builtin_tools())
    tools = DeferredTools(registry, ToolSearchMode())
    registry.register(ToolSearch(tools))
    return tools


DEFERRED = catalog().deferred()


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("select:NotebookEdit,WebFetch", ["NotebookEdit", "WebFetch"]),
        ("select:webfetch, nope", ["WebFetch"]),  # names are matched whatever their case
        ("WebSearch", ["WebSearch"]),  # a tool's name alone is that tool
        ("jupyter notebook", ["NotebookEdit"]),
        ("+web page", ["WebFetch"]),  # "+web" must be in the name
        ("background shell output", ["BashOutput", "KillShell"]),
        ("plan approve", ["ExitPlanMode"]),
        ("quantum", []),
    ],
)
def test_the_query_forms_find_what_claude_codes_would(query: str, found: list[str]) -> None:
    assert search(DEFERRED, query, 5)[: len(found) or None] == found


def test_keywords_give_at_most_max_results() -> None:
    assert len(search(DEFERRED, "the a tool", 2)) <= 2


def test_names_split_into_words() -> None:
    assert words("NotebookEdit") == ["notebook", "edit"]
    assert words("mcp__github__create_issue") == ["mcp", "github", "create", "issue"]
    assert words("AskUserQuestion") == ["ask", "user", "question"]


def test_a_search_answers_with_references_only(tmp_path: Path) -> None:
    tool = ToolSearch(catalog())
    result = call(tool, context(tmp_path), query="select:NotebookEdit")
    assert result.content == [ToolReferenceBlock(tool_name="NotebookEdit")]
    assert not result.is_error and result.summary == "loaded NotebookEdit"


def test_nothing_found_is_said_with_the_list_not_as_an_error(tmp_path: Path) -> None:
    result = call(ToolSearch(catalog()), context(tmp_path), query="quantum")
    assert not result.is_error and "NotebookEdit" in text(result) and result.summary == "no match"


def test_the_description_names_every_deferred_tool() -> None:
    description = ToolSearch(catalog()).spec()["description"]
    deferred = (
        "BashOutput, KillShell, NotebookEdit, TodoWrite, WebFetch, WebSearch, AskUserQuestion, ExitPlanMode"
    )
    assert description.endswith(f"Deferred tools: {deferred}.")


def test_an_mcp_server_with_many_tools_is_listed_as_a_pattern() -> None:
    many = [f"mcp__github__tool_{i}" for i in range(12)]
    assert listing(["WebFetch", *many, "mcp__docs__search"]) == (
        "WebFetch, mcp__github__* (12 tools), mcp__docs__search"
    )
