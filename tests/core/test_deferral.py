"""Tool search's policy: when a session defers tools (`ENABLE_TOOL_SEARCH`, where the requests go),
and which definitions each request carries as tools are loaded, for which model and mode."""

from __future__ import annotations

import subprocess
import sys

import pytest

from piton.core.conversation.messages import (
    Message,
    TextBlock,
    ToolReferenceBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.deferral import TOOL_SEARCH, DeferredTools, ToolSearchMode, tool_search_mode
from piton.core.tools import AnyTool, ToolRegistry
from tests.fakes.tools import Probe

WINDOW = 200_000


@pytest.mark.parametrize(
    ("env", "platform", "mode"),
    [
        ({}, "anthropic", ToolSearchMode()),  # Anthropic's API: on by default
        ({"ANTHROPIC_BASE_URL": "https://api.anthropic.com"}, "anthropic", ToolSearchMode()),
        ({"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}, "anthropic", ToolSearchMode()),  # a gateway too
        (
            {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080", "ENABLE_TOOL_SEARCH": "true"},
            "anthropic",
            ToolSearchMode(),
        ),
        ({"ENABLE_TOOL_SEARCH": "false"}, "anthropic", None),
        ({"ENABLE_TOOL_SEARCH": "0"}, "anthropic", None),
        ({"ENABLE_TOOL_SEARCH": "auto"}, "anthropic", ToolSearchMode(10)),
        ({"ENABLE_TOOL_SEARCH": "auto:5"}, "anthropic", ToolSearchMode(5)),
        ({"ENABLE_TOOL_SEARCH": "auto:0"}, "anthropic", ToolSearchMode()),
        ({"ENABLE_TOOL_SEARCH": "auto:100"}, "anthropic", None),
        ({"ENABLE_TOOL_SEARCH": "auto:lots"}, "anthropic", ToolSearchMode(10)),
        ({"ENABLE_TOOL_SEARCH": "true"}, "bedrock", None),  # Bedrock and Vertex get every tool
        ({}, "vertex", None),
        ({}, None, None),  # a provider that does not say where its requests go
    ],
)
def test_enable_tool_search_is_read_as_claude_code_reads_it(
    env: dict[str, str], platform: str | None, mode: ToolSearchMode | None
) -> None:
    assert tool_search_mode(env, platform) == mode


def deferred(name: str, kind: str = "other") -> AnyTool:
    tool = Probe(name)
    tool.deferred = True
    tool.kind = kind  # type: ignore[assignment]
    return tool


def session(mode: ToolSearchMode | None = None) -> tuple[ToolRegistry, DeferredTools]:
    registry = ToolRegistry(
        [
            Probe("Read"),
            deferred("WebFetch"),
            Probe("Bash"),
            deferred("ExitPlanMode", "plan"),
            Probe(TOOL_SEARCH),
        ]
    )
    return registry, DeferredTools(registry, mode or ToolSearchMode())


def loaded(*names: str) -> list[Message]:
    use = ToolUseBlock(id="toolu_1", name=TOOL_SEARCH, input={"query": "x"})
    references = [ToolReferenceBlock(tool_name=n) for n in names]
    return [
        Message.user("go"),
        Message(role="assistant", content=[use]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content=list(references))]),
    ]


def sent(specs: list[dict[str, object]]) -> list[tuple[object, bool]]:
    return [(s["name"], bool(s.get("defer_loading"))) for s in specs]


def test_a_deferred_tool_is_sent_once_loaded_and_marked_so() -> None:
    _, tools = session()
    first, defers = tools.specs("sonnet", [Message.user("go")], mode="default", window=WINDOW)
    assert defers and sent(first) == [("Read", False), ("Bash", False), (TOOL_SEARCH, False)]
    after, _ = tools.specs("sonnet", loaded("WebFetch"), mode="default", window=WINDOW)
    assert sent(after) == [("Read", False), ("WebFetch", True), ("Bash", False), (TOOL_SEARCH, False)]
    # what is not deferred stays in the same order: the cached prefix is the same
    assert [s for s in after if not s.get("defer_loading")] == first


def test_the_same_list_comes_back_while_nothing_changes() -> None:
    _, tools = session()
    history = loaded("WebFetch")
    one, _ = tools.specs("sonnet", history, mode="default", window=WINDOW)
    history.append(Message(role="assistant", content=[TextBlock(text="ok")]))
    two, _ = tools.specs("sonnet", history, mode="default", window=WINDOW)
    assert one is two


def test_a_model_without_tool_search_gets_every_tool_and_nothing_to_search() -> None:
    _, tools = session()
    specs, defers = tools.specs("claude-opus-4-1", loaded("WebFetch"), mode="default", window=WINDOW)
    assert not defers
    assert sent(specs) == [("Read", False), ("WebFetch", False), ("Bash", False), ("ExitPlanMode", False)]


def test_plan_mode_sends_exit_plan_mode_up_front_from_then_on() -> None:
    _, tools = session()
    history = [Message.user("go")]
    assert "ExitPlanMode" not in [
        s["name"] for s in tools.specs("sonnet", history, mode="default", window=WINDOW)[0]
    ]
    planned, _ = tools.specs("sonnet", history, mode="plan", window=WINDOW)
    assert ("ExitPlanMode", False) in sent(planned)
    after, _ = tools.specs("sonnet", history, mode="acceptEdits", window=WINDOW)
    assert after is planned, "leaving plan mode changes nothing more"
    assert [t.name for t in tools.deferred()] == ["WebFetch"]


def test_a_call_to_a_deferred_tool_the_request_did_not_carry_says_how_to_load_it() -> None:
    registry, tools = session()
    assert registry.held is not None
    assert registry.held("WebFetch") is None, "no request yet: nothing to judge by"
    tools.specs("sonnet", [Message.user("go")], mode="default", window=WINDOW)
    why = registry.held("WebFetch")
    assert why is not None and 'select:WebFetch"' in why and TOOL_SEARCH in why
    assert registry.held("Read") is None and registry.held("Nope") is None
    tools.specs("sonnet", loaded("WebFetch"), mode="default", window=WINDOW)
    assert registry.held("WebFetch") is None


def test_auto_defers_only_past_its_share_of_the_window() -> None:
    _, tools = session(ToolSearchMode(10))
    small = tools.specs("sonnet", [Message.user("go")], mode="default", window=WINDOW)
    assert not small[1] and TOOL_SEARCH not in [s["name"] for s in small[0]]
    big = tools.specs("sonnet", [Message.user("go")], mode="default", window=1_000)
    assert big[1] and "WebFetch" not in [s["name"] for s in big[0]]


def test_nothing_to_defer_means_nothing_to_search() -> None:
    registry = ToolRegistry([Probe("Read"), Probe(TOOL_SEARCH)])
    specs, defers = DeferredTools(registry, ToolSearchMode()).specs(
        "sonnet", [Message.user("go")], mode="default", window=WINDOW
    )
    assert not defers and sent(specs) == [("Read", False)]


def test_a_compacted_history_loads_only_what_it_still_references() -> None:
    _, tools = session()
    tools.specs("sonnet", loaded("WebFetch"), mode="default", window=WINDOW)
    fresh, _ = tools.specs("sonnet", [Message.user("summary")], mode="default", window=WINDOW)
    assert "WebFetch" not in [s["name"] for s in fresh]


def test_a_deferred_tools_schema_is_never_built_unless_a_request_carries_it() -> None:
    """Start-up pays for the definitions the first request sends, not for the deferred ones: their
    input models build their validators and schemas only once loaded (a fresh interpreter, so
    nothing else built them first)."""
    code = """
from piton.builtin_tools import builtin_tools
from piton.builtin_tools.tool_search import ToolSearch
from piton.core.deferral import DeferredTools, ToolSearchMode
from piton.core.tools import ToolRegistry
registry = ToolRegistry(builtin_tools())
deferred = DeferredTools(registry, ToolSearchMode())
registry.register(ToolSearch(deferred))
sent, active = deferred.specs("claude-sonnet-4-5", [], mode="default", window=200_000)
assert active
names = {spec["name"] for spec in sent}
for tool in registry:
    print(tool.name, tool.name in names, tool.deferred, tool.input_model.__pydantic_complete__)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rows = [line.split() for line in done.stdout.splitlines()]
    deferred_tools = [name for name, sent, deferred, _ in rows if sent == "False" and deferred == "True"]
    assert len(deferred_tools) >= 3, rows
    for name, sent, _, built in rows:
        assert built == sent, f"{name}: sent {sent}, its input model built {built}"
