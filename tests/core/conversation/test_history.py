from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from piton.core.conversation.history import is_valid, repair, to_api_messages
from piton.core.conversation.messages import (
    UNFINISHED_TOOL_RESULT,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tests.fakes.validate import history_problem


def use(i: str) -> ToolUseBlock:
    return ToolUseBlock(id=i, name="Read", input={"file_path": i})


def result(i: str, text: str = "ok") -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=i, content=text)


def api_problem(history: list[Message]) -> str | None:
    return history_problem(to_api_messages(history))


def test_valid_history_is_returned_as_the_same_objects() -> None:
    history = [
        Message.user("read a"),
        Message(role="assistant", content=[use("a")]),
        Message(role="user", content=[result("a")]),
        Message(role="assistant", content=[TextBlock(text="done")]),
    ]
    repaired = repair(history)
    assert all(x is y for x, y in zip(repaired, history, strict=True))
    assert is_valid(history)


def test_dangling_tool_use_at_the_end_gets_interrupted_results() -> None:
    history = [Message.user("go"), Message(role="assistant", content=[use("a"), use("b")])]
    repaired = repair(history)
    assert len(repaired) == 3
    assert [(b.tool_use_id, b.content, b.is_error) for b in repaired[2].tool_results] == [
        ("a", UNFINISHED_TOOL_RESULT, True),
        ("b", UNFINISHED_TOOL_RESULT, True),
    ]
    assert api_problem(repaired) is None


def test_missing_result_is_added_in_front_of_the_next_prompt() -> None:
    history = [
        Message.user("go"),
        Message(role="assistant", content=[use("a"), use("b")]),
        Message(role="user", content=[TextBlock(text="next"), result("b")]),
    ]
    repaired = repair(history)
    kinds = [(type(b).__name__, getattr(b, "tool_use_id", None)) for b in repaired[2].content]
    assert kinds == [("ToolResultBlock", "b"), ("ToolResultBlock", "a"), ("TextBlock", None)]
    assert api_problem(repaired) is None
    assert api_problem(history) is not None  # the fake API agrees the original was invalid


def test_orphan_and_duplicate_results_are_dropped() -> None:
    history = [
        Message.user("go"),
        Message(role="assistant", content=[use("a")]),
        Message(role="user", content=[result("a"), result("a", "again"), result("zzz")]),
    ]
    repaired = repair(history)
    assert [(b.tool_use_id, b.content) for b in repaired[2].tool_results] == [("a", "ok")]


def test_leading_assistant_message_is_dropped() -> None:
    history = [Message(role="assistant", content=[TextBlock(text="hi")]), Message.user("hello")]
    assert [m.role for m in repair(history)] == ["user"]


def test_request_merges_neighbours_and_puts_results_first() -> None:
    history = [
        Message.user("go"),
        Message(role="assistant", content=[use("a")]),
        Message(role="user", content=[result("a")]),
        Message.user("[Request interrupted by the user]"),
        Message.user("now something else"),
    ]
    messages = to_api_messages(history)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[2]["content"]] == ["tool_result", "text", "text"]


def test_request_skips_messages_that_end_up_empty() -> None:
    history = [
        Message.user("go"),
        Message(role="assistant", content=[TextBlock(text="")]),
        Message.user("again"),
    ]
    assert to_api_messages(history) == [
        {"role": "user", "content": [{"type": "text", "text": "go"}, {"type": "text", "text": "again"}]}
    ]


# A random history: prompts, assistant turns with tool calls, results that may be missing, duplicated,
# orphaned or out of order, and empty text blocks, as crashes and interrupts could leave behind.
_ids = st.sampled_from(["t1", "t2", "t3", "t4"])
_text = st.sampled_from(["", " ", "hello", "more text"])
_assistant = st.builds(
    lambda texts, ids: Message(
        role="assistant", content=[TextBlock(text=t) for t in texts] + [use(i) for i in dict.fromkeys(ids)]
    ),
    st.lists(_text, max_size=2),
    st.lists(_ids, max_size=3),
)
_user = st.builds(
    lambda texts, ids: Message(
        role="user", content=[result(i) for i in ids] + [TextBlock(text=t) for t in texts]
    ),
    st.lists(_text, max_size=2),
    st.lists(_ids, max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_assistant, _user), max_size=8), st.sampled_from(["go", "start"]))
def test_any_history_repairs_into_one_the_api_accepts(body: list[Message], first: str) -> None:
    # tool ids must be unique across a conversation, as the API issues them
    seen: set[str] = set()
    history = [Message.user(first)]
    for n, message in enumerate(body):
        if message.role == "assistant":
            blocks = []
            for b in message.content:
                if isinstance(b, ToolUseBlock):
                    b = ToolUseBlock(id=f"{b.id}_{n}", name=b.name, input=b.input)
                    seen.add(b.id)
                blocks.append(b)
            history.append(Message(role="assistant", content=blocks))
        else:
            prev = n - 1
            blocks = [
                ToolResultBlock(tool_use_id=f"{b.tool_use_id}_{prev}", content=b.content)
                if isinstance(b, ToolResultBlock)
                else b
                for b in message.content
            ]
            history.append(Message(role="user", content=blocks))
    repaired = repair(history)
    assert api_problem(repaired) is None
    assert is_valid(repaired)  # repairing twice changes nothing


def test_a_call_repeated_under_one_id_is_kept_once() -> None:
    call = ToolUseBlock(id="toolu_1", name="Read", input={})
    history = [Message.user("go"), Message(role="assistant", content=[call, call])]
    repaired = repair(history)
    assert [b.id for b in repaired[1].tool_uses] == ["toolu_1"]
    assert [b.tool_use_id for b in repaired[2].tool_results] == ["toolu_1"]
    assert is_valid(repaired)
