"""Tool search: which tool definitions a request carries when the rarely needed tools are held back
(deferred) until the model loads them with ToolSearch.

A deferred tool's definition goes into a request only once a `tool_reference` to it (a ToolSearch
result) is in the conversation, and then marked `defer_loading`: the API keeps such definitions out
of the prompt's prefix and shows each one where its reference is. Loading a tool mid-session so
leaves the cached prefix (the other tools, the system prompt, the earlier messages) as it was, while
the first request carries only the tools most turns use.

Whether a session defers follows Claude Code's `ENABLE_TOOL_SEARCH`; a request defers only for a
model that takes deferred tools, and otherwise carries every definition (the body encoder then turns
the history's references into text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from piton.core.conversation.messages import Message, encode_json
from piton.core.models import model_info
from piton.core.records import record
from piton.core.tools import AnyTool, ToolRegistry

TOOL_SEARCH = "ToolSearch"
DEFAULT_AUTO_PERCENT = 10  # Claude Code's `auto`: defer once the deferrable tools pass 10% of the window
CHARS_PER_TOKEN = 2.5  # how Claude Code sizes tool definitions against that share
_FALSY = ("0", "false", "no", "off")


@record(frozen=True)
class ToolSearchMode:
    """How a session defers: always (`auto_percent` None), or only while the deferrable definitions
    would take more than `auto_percent` percent of the context window (`auto`, `auto:N`)."""

    auto_percent: int | None = None


def tool_search_mode(env: Mapping[str, str], platform: str | None) -> ToolSearchMode | None:
    """`ENABLE_TOOL_SEARCH` as Claude Code reads it; None: every tool is sent. Unset or true: defer;
    `auto` or `auto:N`: defer past N% (default 10) of the window, `auto:0` always, `auto:100` never;
    false: never. Only Anthropic's Messages API gets deferred tools (Bedrock and Vertex want a beta
    header of their own), at its own address or a gateway's: a gateway that cannot pass
    `tool_reference` blocks on answers 400, and that error says to set the variable to false."""
    if platform != "anthropic":
        return None
    value = env.get("ENABLE_TOOL_SEARCH", "").strip().lower()
    if not value:
        return ToolSearchMode()
    if value == "auto" or value.startswith("auto:"):
        percent = _percent(value.removeprefix("auto").removeprefix(":"))
        return None if percent >= 100 else ToolSearchMode(percent or None)
    return None if value in _FALSY else ToolSearchMode()


def _percent(text: str) -> int:
    try:
        return max(0, min(100, int(text))) if text else DEFAULT_AUTO_PERCENT
    except ValueError:  # as Claude Code: a value it cannot read is the default share
        return DEFAULT_AUTO_PERCENT


class _References:
    """The tools a history's `tool_reference` blocks name, kept in step with a history that grows by
    appending (one that changed otherwise, a compacted one, is read again)."""

    def __init__(self) -> None:
        self._history: Sequence[Message] | None = None
        self._count = 0
        self._last: Message | None = None
        self._names: frozenset[str] = frozenset()

    def names(self, history: Sequence[Message]) -> frozenset[str]:
        count = self._count
        appended = (
            history is self._history
            and len(history) >= count
            and (count == 0 or history[count - 1] is self._last)
        )
        if not appended:
            self._history, self._names, count = history, frozenset(), 0
        new = {name for message in history[count:] for name in message.tool_references}
        if not new <= self._names:
            self._names = self._names | new
        self._count, self._last = len(history), (history[-1] if history else None)
        return self._names


class DeferredTools:
    """An agent's deferred tools (those its ToolSearch finds) and the definitions each of its
    requests carries. It also tells the registry to refuse a call to a deferred tool the request
    did not carry: the model saw no schema for it, only its name."""

    def __init__(self, registry: ToolRegistry, mode: ToolSearchMode) -> None:
        self.registry = registry
        self.mode = mode
        # deferred tools sent up front from now on: ExitPlanMode once the session is in plan mode
        # (sending it up front again and again, rather than back and forth, changes the prefix once)
        self._pinned: set[str] = set()
        self._references = _References()
        self._key: tuple[Any, ...] | None = None
        self._specs: list[dict[str, Any]] = []
        self._sent: frozenset[str] | None = None  # what the last request carried (None: none yet)
        self._size: tuple[tuple[int, int], int] = ((-1, -1), 0)  # deferrable characters, by state
        registry.held = self.held

    def deferred(self) -> list[AnyTool]:
        """The tools held back until loaded, in the registry's order."""
        return [t for t in self.registry if t.deferred and t.name not in self._pinned]

    def specs(
        self, model: str, history: Sequence[Message], *, mode: str, window: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """The definitions a request of `model` carries after `history` in permission mode `mode`, and
        whether it defers (it may then carry `tool_reference` blocks). The same list comes back while
        nothing changed, so its encoding is reused."""
        if mode == "plan":
            self._pinned.update(t.name for t in self.registry if t.deferred and t.kind == "plan")
        active = self._active(model, window)
        loaded = self._references.names(history) if active else frozenset()
        key = (self.registry.version, len(self._pinned), active, loaded)
        if key != self._key:
            self._key, self._specs = key, self._build(active, loaded)
            self._sent = frozenset(str(spec["name"]) for spec in self._specs)
        return self._specs, active

    def held(self, name: str) -> str | None:
        """Why `name` may not be called now: a deferred tool the last request did not carry."""
        if self._sent is None or name in self._sent:
            return None
        tool = self.registry.get(name)
        if tool is None or not tool.deferred or name in self._pinned:
            return None
        return (
            f"{name} is a deferred tool and has not been loaded, so it cannot be called yet: call "
            f'{TOOL_SEARCH} with the query "select:{name}" first, then call {name}.'
        )

    def _active(self, model: str, window: int) -> bool:
        if not model_info(model).tool_search or not self.deferred():
            return False
        if self.mode.auto_percent is None:
            return True
        return self._deferrable_chars() > window * self.mode.auto_percent / 100 * CHARS_PER_TOKEN

    def _deferrable_chars(self) -> int:
        state = (self.registry.version, len(self._pinned))
        if self._size[0] != state:
            self._size = (state, sum(len(encode_json(self.registry.spec_of(t))) for t in self.deferred()))
        return self._size[1]

    def _build(self, active: bool, loaded: frozenset[str]) -> list[dict[str, Any]]:
        spec = self.registry.spec_of
        if not active:  # every definition, and nothing to search
            return [spec(tool) for tool in self.registry if tool.name != TOOL_SEARCH]
        out: list[dict[str, Any]] = []
        for tool in self.registry:
            if tool.name == TOOL_SEARCH:
                out.append(tool.spec())  # it lists the deferred tools as they are now
            elif not tool.deferred or tool.name in self._pinned:
                out.append(spec(tool))
            elif tool.name in loaded:
                out.append({**spec(tool), "defer_loading": True})
        return out
