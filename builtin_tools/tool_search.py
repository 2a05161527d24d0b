"""ToolSearch: loads deferred tools. With tool search on, the rarely needed tools (and MCP tools) are
known to the model by name only, listed in this tool's description; a search answers with a
`tool_reference` block per tool found, which the API expands into the tool's definition, so the model
can call it from then on. The query forms are Claude Code's: `select:A,B`, keywords, `+word`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import Field

from piton.core.conversation.messages import ToolReferenceBlock
from piton.core.deferral import TOOL_SEARCH
from piton.core.tools import AnyTool, ResultPart, Tool, ToolContext, ToolInput, ToolResult

_LISTED_PER_SERVER = 8  # an MCP server with more deferred tools is listed as a pattern with a count
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

DESCRIPTION = (
    "Loads deferred tools so that you can call them. A deferred tool is known by its name only (they "
    "are listed below) until it is loaded: calling one before that fails. Query forms: "
    '"select:NotebookEdit,WebFetch" loads those tools by name; keywords ("jupyter notebook") load the '
    'best matches, up to max_results; "+slack send" requires "slack" in the name. A tool stays loaded '
    "until the conversation is compacted."
)


class Catalog(Protocol):
    """What ToolSearch searches: the deferred tools of the agent it serves."""

    def deferred(self) -> list[AnyTool]: ...


class ToolSearchInput(ToolInput):
    query: str = Field(
        min_length=1,
        description='"select:Name1,Name2" for tools by name, or keywords; "+word" must be in the name.',
    )
    max_results: int = Field(5, ge=1, le=20, description="At most this many tools for keywords.")


def words(text: str) -> list[str]:
    """`text` as lower-case words, camel case and snake case split: `NotebookEdit` -> notebook, edit."""
    return [w.lower() for w in _WORD.findall(text)]


def _score(tool: AnyTool, terms: list[str]) -> int:
    """How well `terms` fit `tool`: a word of its name weighs most, then a piece of its name, a word
    of its description, a field of its input (the order Claude Code's search ranks them in)."""
    name = tool.name.lower()
    parts = set(words(tool.name))
    described = set(words(tool.description))
    fields = {w for key in tool.spec()["input_schema"].get("properties", {}) for w in words(key)}
    score = 0
    for term in terms:
        score += 10 if term in parts else 5 if term in name else 0
        score += 2 if term in described else 0
        score += 1 if term in fields else 0
    return score


def search(tools: Sequence[AnyTool], query: str, limit: int) -> list[str]:
    """The names of the `tools` a query finds, best first."""
    query = query.strip()
    if query.lower().startswith("select:"):
        wanted = [n.strip().lower() for n in query[len("select:") :].split(",") if n.strip()]
        by_name = {t.name.lower(): t.name for t in tools}
        return [by_name[n] for n in dict.fromkeys(wanted) if n in by_name]
    exact = [t.name for t in tools if t.name.lower() == query.lower()]
    if exact:
        return exact
    raw = query.lower().split()
    required = [w[1:] for w in raw if w.startswith("+") and len(w) > 1]
    terms = [w for t in raw for w in words(t)]
    found = [
        (score, -index, tool.name)
        for index, tool in enumerate(tools)
        if all(r in tool.name.lower() for r in required) and (score := _score(tool, terms)) > 0
    ]
    return [name for _, _, name in sorted(found, reverse=True)[:limit]]


def _server(name: str) -> str | None:
    """`mcp__github` for `mcp__github__create_issue`; None for a tool of no MCP server."""
    end = name.find("__", 5) if name.startswith("mcp__") else -1
    return name[:end] if end > 5 else None


def listing(names: list[str]) -> str:
    """The deferred tools' names, an MCP server with many of them as `mcp__server__*` with a count."""
    counts = Counter(server for name in names if (server := _server(name)) is not None)
    out: list[str] = []
    for name in names:
        server = _server(name)
        if server is None or counts[server] <= _LISTED_PER_SERVER:
            out.append(name)
        elif (grouped := f"{server}__* ({counts[server]} tools)") not in out:
            out.append(grouped)
    return ", ".join(out)


class ToolSearch(Tool[ToolSearchInput]):
    name = TOOL_SEARCH
    description = DESCRIPTION
    input_model = ToolSearchInput
    read_only = True  # it changes nothing: it tells the API which definitions to show
    kind = "other"

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog

    def spec(self) -> dict[str, Any]:
        spec = super().spec()
        names = [t.name for t in self._catalog.deferred()]
        spec["description"] = f"{DESCRIPTION}\n\nDeferred tools: {listing(names) or '(none)'}."
        return spec

    async def run(self, args: ToolSearchInput, ctx: ToolContext) -> ToolResult:
        tools = self._catalog.deferred()
        found = search(tools, args.query, args.max_results)
        if not found:
            listed = listing([t.name for t in tools]) or "(none)"
            return ToolResult(
                f'No deferred tool matches "{args.query}". The deferred tools are: {listed}.',
                summary="no match",
            )
        # only references: the API shows each tool's definition in their place
        content: list[ResultPart] = [ToolReferenceBlock(tool_name=name) for name in found]
        return ToolResult(content, summary=f"loaded {', '.join(found)}")
