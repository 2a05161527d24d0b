"""WebSearch(query, allowed_domains?, blocked_domains?): a web search through the Messages API's own
search tool (`web_search_20250305`), run as a side request so the conversation gets the links and a
short answer, not the search's raw blocks. A provider or model without the tool gives a clear error.
Each search is counted in the usage (`webSearchRequests`) and costs what the API charges."""

from __future__ import annotations

from pydantic import Field, model_validator

from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult

SEARCH_TOOL = "web_search_20250305"
MAX_USES = 8  # searches the side request may make for one call
MAX_ANSWER_TOKENS = 4_096


class WebSearchInput(ToolInput):
    query: str = Field(min_length=2, description="The search query.")
    allowed_domains: list[str] | None = Field(None, description="Only include results from these domains.")
    blocked_domains: list[str] | None = Field(None, description="Never include results from these domains.")

    @model_validator(mode="after")
    def _one_list(self) -> WebSearchInput:
        if self.allowed_domains and self.blocked_domains:
            raise ValueError("give allowed_domains or blocked_domains, not both")
        return self


class WebSearch(Tool[WebSearchInput]):
    name = "WebSearch"
    description = (
        "Search the web and get a short answer with the links it comes from. Use it for information "
        "newer than your training, current documentation, error messages, and releases. Results can be "
        "limited to (allowed_domains) or kept off (blocked_domains) some sites. Cite the sources you "
        "use as Markdown links. To read a result in full, use WebFetch on its URL."
    )
    input_model = WebSearchInput
    kind = "other"
    deferred = True  # most turns never go to the web

    def rule_content(self, args: WebSearchInput, ctx: ToolContext) -> str | None:
        return args.query

    def is_read_only(self, args: WebSearchInput, ctx: ToolContext) -> bool:
        return True  # it changes nothing here; plan mode asks about it instead of refusing it

    async def run(self, args: WebSearchInput, ctx: ToolContext) -> ToolResult:
        if ctx.ask_model is None:
            return ToolResult.error("WebSearch is unavailable here: there is no model to search with.")
        from piton.core.conversation.events import MessageDone
        from piton.core.conversation.messages import Message
        from piton.core.models import small_fast_model
        from piton.core.providers import ModelRequest, ProviderError

        spec: dict[str, object] = {"type": SEARCH_TOOL, "name": "web_search", "max_uses": MAX_USES}
        if args.allowed_domains:
            spec["allowed_domains"] = args.allowed_domains
        if args.blocked_domains:
            spec["blocked_domains"] = args.blocked_domains
        request = ModelRequest(
            model=small_fast_model(),
            system=(
                "You search the web for a coding assistant. Search for the query, then answer it in a few "
                "sentences from what you found, citing each source you use as a Markdown link."
            ),
            messages=[Message.user(f"Search the web for: {args.query}")],
            tools=[spec],
            thinking=False,
            max_tokens=MAX_ANSWER_TOKENS,
            cache=False,
        )
        done: MessageDone | None = None
        try:
            async for event in ctx.ask_model(request):
                if isinstance(event, MessageDone):
                    done = event
        except ProviderError as e:
            return ToolResult.error(f"WebSearch is not available with this provider or model: {e}")
        if done is None:
            return ToolResult.error("WebSearch got no answer")
        errors = [r["error"] for r in done.web_results if "error" in r]
        links = [r for r in done.web_results if "url" in r]
        if errors and not links:
            return ToolResult.error(f"The web search failed: {', '.join(dict.fromkeys(errors))}")
        searches = done.usage.web_search_requests
        lines = [f'Web search results for "{args.query}":', ""]
        lines += [f"- [{r['title']}]({r['url']})" for r in dict((r["url"], r) for r in links).values()]
        if not links:
            lines.append("(no results)")
        if done.message.text.strip():
            lines += ["", done.message.text.strip()]
        lines += ["", "Cite the sources you use as Markdown links."]
        plural = "es" if searches != 1 else ""
        summary = f"{searches} search{plural}, {len(links)} result{'s' if len(links) != 1 else ''}"
        return ToolResult("\n".join(lines), summary=summary)
