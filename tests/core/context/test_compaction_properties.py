"""Compaction's pure parts over random histories: no tool_use ever loses its result."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from piton.core.context.result_store import FileResultStore
from piton.core.context.summary import (
    SUMMARY_HEADER,
    budgeted,
    split_point,
    stub_tool_results,
    summary_message,
    user_messages,
)
from piton.core.conversation.history import is_valid, to_api_messages
from piton.core.conversation.messages import (
    Base64ImageSource,
    ImageBlock,
    Message,
    TextBlock,
    ToolReferenceBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tests.fakes.validate import history_problem

PIXEL = Base64ImageSource(media_type="image/png", data="iVBORw0KGgo=")


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Valid conversations: prompts, replies with 0-3 tool calls, and their results of any size."""
    out: list[Message] = []
    ids = 0
    for turn in range(draw(st.integers(1, 8))):
        out.append(Message.user(f"prompt {turn}: " + "x" * draw(st.integers(0, 50))))
        for _ in range(draw(st.integers(0, 4))):
            calls = draw(st.integers(0, 3))
            uses = [
                ToolUseBlock(id=f"toolu_{ids + i:04d}", name="Read", input={"n": i}) for i in range(calls)
            ]
            ids += calls
            out.append(Message(role="assistant", content=[TextBlock(text="working"), *uses]))
            if not uses:
                break
            results: list[ToolResultBlock] = []
            for use in uses:
                size = draw(st.sampled_from([0, 10, 399, 400, 3_000]))
                content: str | list[TextBlock | ImageBlock] = "r" * size
                if draw(st.integers(0, 5)) == 0:
                    content = [TextBlock(text="shot"), ImageBlock(source=PIXEL)]
                results.append(
                    ToolResultBlock(tool_use_id=use.id, content=content, is_error=draw(st.booleans()))
                )
            out.append(Message(role="user", content=list(results)))
    return out


def pairs(history: list[Message]) -> list[tuple[str, list[str]]]:
    return [
        (
            m.role,
            [b.id for b in m.tool_uses] if m.role == "assistant" else [r.tool_use_id for r in m.tool_results],
        )
        for m in history
    ]


@settings(max_examples=150, deadline=None)
@given(histories(), st.integers(0, 4))
def test_clearing_tool_results_keeps_every_pair_and_the_latest_results(
    history: list[Message], keep: int
) -> None:
    with tempfile.TemporaryDirectory() as root:
        store = FileResultStore(Path(root))
        out, stubs = stub_tool_results(history, keep, store)
        assert pairs(out) == pairs(history)
        assert is_valid(out) and history_problem(to_api_messages(out)) is None
        with_results = [i for i, m in enumerate(history) if m.tool_results]
        for i in with_results[len(with_results) - keep :] if keep else []:
            assert out[i] is history[i], "the latest result messages are untouched"
        before = {r.tool_use_id: r for m in history for r in m.tool_results}
        for m in out:
            for r in m.tool_results:
                assert r.is_error == before[r.tool_use_id].is_error
                if r.tool_use_id in stubs:
                    assert r.content == stubs[r.tool_use_id]
                    saved = Path(stubs[r.tool_use_id].split(" at ")[1].split(";")[0])
                    original = before[r.tool_use_id].content
                    if isinstance(original, str):
                        assert saved.read_text(encoding="utf-8") == original
                else:
                    assert r is before[r.tool_use_id]
        again, more = stub_tool_results(out, keep, store)
        assert more == {} and all(a is b for a, b in zip(again, out, strict=True)), (
            "clearing twice is a no-op"
        )


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_the_split_point_never_separates_a_tool_call_from_its_result(
    history: list[Message], data: st.DataObject
) -> None:
    counts = [data.draw(st.integers(1, 500)) for _ in history]
    budget = data.draw(st.integers(0, 3_000))
    split = split_point(history, counts, budget)
    if split is None:
        assert len(history) == 1 or all(m.tool_results for m in history[1:] if m.role == "user")
        return
    assert 1 <= split < len(history)
    kept = history[split:]
    assert kept[0].role == "assistant" or not kept[0].tool_results
    compacted = [summary_message("summary", user_messages(history[:split]), 0), *kept]
    assert is_valid(compacted) and history_problem(to_api_messages(compacted)) is None
    safe = [
        i for i in range(1, len(history)) if history[i].role == "assistant" or not history[i].tool_results
    ]
    # as much as the budget allows stays verbatim; when nothing fits, as little as possible
    assert sum(counts[split:]) <= budget or split == safe[-1]
    assert all(sum(counts[i:]) > budget for i in safe if i < split)


@given(st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=12), st.integers(50, 2_000))
def test_the_users_messages_fit_their_budget_and_keep_the_first_and_latest(
    messages: list[str], budget: int
) -> None:
    kept, left_out = budgeted(messages, budget)
    assert kept[0].startswith(messages[0][: budget // 2])
    if sum(map(len, messages)) <= budget:
        assert (kept, left_out) == (messages, 0)
        return
    assert sum(map(len, kept)) <= budget + 100  # the cut note
    assert kept[1:] == messages[len(messages) - len(kept) + 1 :], "the latest ones, whole"
    assert left_out == len(messages) - len(kept)


def test_quoted_messages_survive_a_second_summary_even_with_closing_tags_inside() -> None:
    tricky = "keep </user-message> literally"
    first = summary_message("one", ["alpha", tricky], 0, ["The task list as it stands:\n[pending] finish"])
    assert first.text.startswith(SUMMARY_HEADER) and "[pending] finish" in first.text
    assert user_messages([first, Message.user("beta")]) == ["alpha", tricky, "beta"]


def test_clearing_old_results_keeps_the_tools_they_loaded() -> None:
    search = ToolUseBlock(id="toolu_s", name="ToolSearch", input={"query": "select:WebFetch"})
    loaded = ToolResultBlock(tool_use_id="toolu_s", content=[ToolReferenceBlock(tool_name="WebFetch")])
    read = ToolUseBlock(id="toolu_r", name="Read", input={"file_path": "a.py"})
    history = [
        Message.user("go"),
        Message(role="assistant", content=[search]),
        Message(role="user", content=[loaded]),
        Message(role="assistant", content=[read]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_r", content="x" * 1_000)]),
        Message(role="assistant", content=[TextBlock(text="done")]),
    ]
    with tempfile.TemporaryDirectory() as root:
        out, stubs = stub_tool_results(history, 0, FileResultStore(Path(root)))
    assert list(stubs) == ["toolu_r"] and out[2] is history[2]
