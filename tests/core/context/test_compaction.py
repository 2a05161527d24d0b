"""Compaction in the loop: when it fires, what each phase keeps, the guard, /compact, and failures."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from piton.core.agent import Agent
from piton.core.agent_parts import AgentConfig, AgentParts
from piton.core.context.compaction import SUMMARY_HEADER, CompactionSettings, Compactor
from piton.core.context.result_store import FileResultStore, ResultCapper
from piton.core.conversation.events import (
    Compacted,
    Compacting,
    MessageDone,
    Notice,
    Result,
    StreamRetry,
    ToolResultsMessage,
)
from piton.core.conversation.history import is_valid, to_api_messages
from piton.core.conversation.messages import INTERRUPTED_REQUEST, Message, TextBlock
from piton.core.conversation.session import SessionLog, load_session
from piton.core.providers import ModelRequest, ProviderError
from piton.core.providers.anthropic import AnthropicProvider
from piton.core.tools import AnyTool, ToolRegistry
from piton.testing.script import HttpError, Reply, ToolCall, reply
from piton.testing.scripted import ScriptedProvider, SeenRequest
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.fakes.tools import NoOp, Probe
from tests.fakes.validate import history_problem
from tests.helpers import collect

WINDOW = 20_000
MAX_OUTPUT = 2_000
LIMIT = 16_000  # 80% of the window; the reply's 2,000 fit under it


def code(lines: int, tag: str) -> str:
    """Source-like text: about four characters a token, like what tools return."""
    return "\n".join(f"def {tag}_{i}(value):\n    return value * {i}  # {tag} line {i}" for i in range(lines))


def make(
    provider: ScriptedProvider,
    tmp_path: Path,
    *tools: AnyTool,
    window: int = WINDOW,
    system: str = "You are a test agent.",
    log: SessionLog | None = None,
    capper: bool = False,
    **settings: Any,
) -> Agent:
    store = FileResultStore(tmp_path / "results")
    return Agent(
        provider,
        ToolRegistry(tools),
        AgentConfig(
            model="claude-sonnet-5-5",
            system_prompt=system,
            cwd=tmp_path,
            session_id="s",
            context_window=window,
            max_output_tokens=MAX_OUTPUT,
        ),
        parts=AgentParts(
            transcript=log,
            capper=ResultCapper(store) if capper else None,
            compactor=Compactor(CompactionSettings(**settings), store),
        ),
    )


def is_summary_request(request: SeenRequest | ModelRequest) -> bool:
    return not request.tools and "<conversation>" in request.messages[0].text


def summary(request: ModelRequest) -> Reply:
    assert is_summary_request(request), "expected the summary request here"
    return reply("## Summary\nThe user wants the parser fixed. Next: run the tests.", output_tokens=300)


def wire_size(messages: tuple[Message, ...] | list[Message]) -> int:
    return len(json.dumps(to_api_messages(messages)))


def assert_api_valid(history: list[Message]) -> None:
    assert is_valid(history)
    assert history_problem(to_api_messages(history)) is None


def position(events: list[Any], kind: type, nth: int = 1) -> int:
    found = [i for i, e in enumerate(events) if isinstance(e, kind)]
    return found[nth - 1]


def test_fires_at_the_first_request_at_or_over_the_limit_and_summarises(tmp_path: Path) -> None:
    # each reply is about 2,500 tokens of text and the reported usage grows with it; the tool results
    # are tiny, so only a summary can free space
    sizes = [4_000, 8_000, 12_000, 15_000, 15_800, 16_000]
    steps: list[Any] = [
        reply(code(130, f"s{i}"), ToolCall("NoOp", {"text": str(i)}), input_tokens=n, output_tokens=5)
        for i, n in enumerate(sizes)
    ]
    steps += [summary, reply("Carrying on.", ToolCall("NoOp", {"text": "next"})), reply("Parser fixed.")]
    provider = ScriptedProvider(*steps)
    agent = make(provider, tmp_path, NoOp())
    first_prompt = "Fix the parser in src/parse.py; keep tabs for indentation, never spaces."
    events = collect(agent.run(first_prompt))

    compactions = [e for e in events if isinstance(e, Compacted)]
    assert len(compactions) == 1
    event = compactions[0]
    assert (event.trigger, event.phase) == ("auto", "summary")
    assert event.pre_tokens >= LIMIT > event.post_tokens
    # not before the sixth reply (15,800 reported: under), at once after it (16,000: at the limit)
    assert position(events, MessageDone, 6) < events.index(event) < position(events, MessageDone, 7)
    requests = provider.requests
    assert [is_summary_request(r) for r in requests] == [False] * 6 + [True, False, False]
    assert first_prompt in requests[6].messages[0].text, "the summary request sees the conversation"
    after = requests[7]
    assert wire_size(after.messages) < wire_size(requests[5].messages) / 2
    opening = after.messages[0].text
    assert opening.startswith(SUMMARY_HEADER)
    assert "The user wants the parser fixed." in opening
    assert f"<user-message>\n{first_prompt}\n</user-message>" in opening
    result = events[-1]
    assert isinstance(result, Result) and (result.subtype, result.result) == ("success", "Parser fixed.")
    assert result.num_turns == 8, "the summary request is not a turn"
    assert result.usage.output_tokens >= 300, "the summary's tokens are counted"
    assert result.metrics["compactions"] == 1
    assert_api_valid(agent.history)
    provider.assert_complete()


def test_tool_results_are_cleared_first_without_an_api_call(tmp_path: Path) -> None:
    outputs = {name: code(120, name) for name in "abcde"}

    async def dump(name: str) -> str:
        return outputs[name]

    sizes = [1_000, 4_000, 7_000, 10_000, 14_000]
    steps = [
        reply(ToolCall("Dump", {"text": name}), input_tokens=n, output_tokens=20)
        for name, n in zip("abcde", sizes, strict=True)
    ]
    provider = ScriptedProvider(*steps, reply("Read them all."))
    agent = make(provider, tmp_path, Probe("Dump", dump, read_only=True))
    events = collect(agent.run("read a to e"))

    [event] = [e for e in events if isinstance(e, Compacted)]
    assert event.phase == "tool-results" and event.post_tokens < LIMIT <= event.pre_tokens
    assert position(events, ToolResultsMessage, 5) < events.index(event)
    assert not any(is_summary_request(r) for r in provider.requests)
    last = provider.requests[-1]
    results = [b for m in last.messages for b in m.tool_results]
    texts = [str(b.content) for b in results]
    assert texts[2:] == [outputs[n] for n in "cde"], "the three latest results stay whole"
    for name, stub in zip("ab", texts[:2], strict=True):
        assert stub.startswith("[Dump result cleared to save context:")
        saved = Path(stub.split(" at ")[1].split(";")[0])
        assert saved.read_text(encoding="utf-8") == outputs[name], "the whole result is kept"
    assert wire_size(last.messages) < wire_size(provider.requests[-2].messages)
    assert_api_valid(agent.history)


def test_every_message_the_user_wrote_survives_repeated_compaction(tmp_path: Path) -> None:
    provider = ScriptedProvider()
    agent = make(provider, tmp_path)
    prompts = [f"Request {i}: {'please ' * 5}rename helper_{i} to util_{i}" for i in range(4)]

    async def session() -> list[Any]:
        events: list[Any] = []
        for i, prompt in enumerate(prompts):
            provider.add(reply(f"Renamed helper_{i}. " + code(150, f"r{i}")))
            events += [e async for e in agent.run(prompt)]
            if i in (1, 3):
                provider.add(summary)
                events += [e async for e in agent.compact()]
        return events

    events = asyncio.run(session())
    assert [e.trigger for e in events if isinstance(e, Compacted)] == ["manual", "manual"]
    opening = agent.history[0].text
    # the second summary carries forward what the first one quoted, in order
    quoted = [opening.index(f"<user-message>\n{p}\n</user-message>") for p in prompts]
    assert quoted == sorted(quoted)
    assert len(agent.history) == 2, "the summary and the latest reply"
    assert_api_valid(agent.history)


def test_manual_compaction_passes_the_users_instructions(tmp_path: Path) -> None:
    provider = ScriptedProvider(reply("Looked at it."), reply("And at that."), summary)
    agent = make(provider, tmp_path)

    async def go() -> list[Any]:
        await _drain(agent.run("look at the lexer"))
        await _drain(agent.run("and at the parser"))
        return [e async for e in agent.compact("keep the list of failing tests")]

    events = asyncio.run(go())
    assert [type(e) for e in events] == [Compacting, Compacted]
    assert "keep the list of failing tests" in provider.requests[-1].messages[0].text
    assert agent.history[0].text.startswith(SUMMARY_HEADER)
    assert agent.metrics.compactions == 1


async def _drain(events: Any) -> None:
    async for _ in events:
        pass


def test_a_window_too_small_to_free_stops_compacting_with_a_clear_message(tmp_path: Path) -> None:
    # the system prompt alone is over the limit: no compaction can help
    big_prompt = code(700, "sys")
    window = 8_192
    provider = ScriptedProvider(
        reply(ToolCall("NoOp", {"text": "1"}), input_tokens=9_000),
        summary,
        reply(ToolCall("Dump", {"text": "2"}), input_tokens=9_000),
        reply("Done anyway."),
    )

    async def dump(_: str) -> str:
        return code(230, "out")  # 12,000 characters: inline normally, previewed when the window is full

    agent = make(
        provider, tmp_path, NoOp(), Probe("Dump", dump), window=window, system=big_prompt, capper=True
    )
    events = collect(agent.run("go"))
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert notices[0] == "compaction found nothing it could summarise without splitting a tool call"
    assert len(notices) == 2 and "it stops trying" in notices[1] and "/clear" in notices[1]
    assert sum(is_summary_request(r) for r in provider.requests) == 1, "no summary after the guard"
    result = events[-1]
    assert isinstance(result, Result) and result.result == "Done anyway."
    dumped = str(agent.history[-2].tool_results[0].content)
    assert "characters (lines" in dumped and "left out" in dumped, "a full window gets brief previews"
    provider.assert_complete()


def test_a_failed_summary_request_leaves_the_history_and_the_run_goes_on(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        reply("One.", ToolCall("NoOp", {"text": "1"}), input_tokens=17_000),
        ProviderError("API error 529: Overloaded", kind="overloaded"),
        reply("Two."),
    )
    agent = make(provider, tmp_path, NoOp())
    events = collect(agent.run("start"))
    assert [e.text for e in events if isinstance(e, Notice)] == [
        "compaction failed: API error 529: Overloaded"
    ]
    assert not [e for e in events if isinstance(e, Compacted)]
    assert agent.history[0] == Message.user("start")
    assert isinstance(events[-1], Result) and events[-1].result == "Two."
    assert_api_valid(agent.history)


def test_an_interrupt_during_the_summary_keeps_the_history_whole(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        reply("One.", ToolCall("NoOp", {"text": "1"}), input_tokens=17_000), KeyboardInterrupt()
    )
    agent = make(provider, tmp_path, NoOp())
    with pytest.raises(KeyboardInterrupt):
        collect(agent.run("start"))
    assert agent.history[0] == Message.user("start")
    assert agent.history[-1] == Message.user(INTERRUPTED_REQUEST)
    assert_api_valid(agent.history)


def test_auto_compaction_can_be_turned_off(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        reply(ToolCall("NoOp", {"text": "1"}), input_tokens=19_000), reply("No compaction.")
    )
    agent = make(provider, tmp_path, NoOp(), enabled=False)
    events = collect(agent.run("go"))
    assert not [e for e in events if isinstance(e, Compacted | Notice)]
    assert len(provider.requests) == 2


# -- the session log -------------------------------------------------------------------------------


def test_a_resumed_session_starts_from_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog(path, "s")
    provider = ScriptedProvider(
        reply("Early work. " + code(150, "early"), ToolCall("NoOp", {"text": "1"}), input_tokens=5_000),
        reply("Middle work. " + code(150, "mid"), ToolCall("NoOp", {"text": "2"}), input_tokens=17_000),
        summary,
        reply("Later work."),
    )
    agent = make(provider, tmp_path, NoOp(), log=log)
    collect(agent.run("the first request"))
    log.close()
    loaded = load_session(path, "s")
    assert loaded.messages == agent.history
    assert loaded.messages[0].text.startswith(SUMMARY_HEADER)
    assert not any("Early work." in m.text for m in loaded.messages), "the summarised part is gone"
    assert loaded.warnings == []


def test_a_resumed_session_keeps_the_cleared_tool_results_cleared(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog(path, "s")

    async def dump(text: str) -> str:
        return code(120, text)

    sizes = [1_000, 4_000, 7_000, 10_000, 14_000]
    steps = [reply(ToolCall("Dump", {"text": f"t{i}"}), input_tokens=n) for i, n in enumerate(sizes)]
    provider = ScriptedProvider(*steps, reply("Done."))
    agent = make(provider, tmp_path, Probe("Dump", dump), log=log)
    collect(agent.run("dump five"))
    log.close()
    loaded = load_session(path, "s")
    assert loaded.messages == agent.history
    stubs = [b for m in loaded.messages for b in m.tool_results if "result cleared" in str(b.content)]
    assert len(stubs) == 2
    assert path.read_text().count('"compact_boundary"') == 1


def test_an_unreadable_compaction_record_keeps_the_history_before_it(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    log = SessionLog(path, "s")
    log.append_message(Message.user("hello"))
    log.append_message(Message(role="assistant", content=[TextBlock(text="hi")]))
    log.record("compact_boundary", messages=[{"role": "robot", "content": 3}])
    log.close()
    loaded = load_session(path, "s")
    assert [m.text for m in loaded.messages] == ["hello", "hi"]
    assert loaded.warnings == [
        "session.jsonl: last line is an unreadable compaction; kept the history before it"
    ]


def test_a_result_already_stored_whole_keeps_its_file_when_cleared(tmp_path: Path) -> None:
    huge = code(600, "big")  # over the inline cap: previewed, and stored whole at once

    async def dump(_: str) -> str:
        return huge

    steps = [reply(ToolCall("Dump", {"text": str(i)}), input_tokens=n) for i, n in enumerate([2_000, 17_000])]
    provider = ScriptedProvider(*steps, reply("Done."))
    agent = make(provider, tmp_path, Probe("Dump", dump), capper=True, keep_results=1)
    collect(agent.run("dump"))
    stored = sorted((tmp_path / "results").iterdir())
    assert len(stored) == 2, "one file per result: clearing the first preview wrote nothing new"
    stub = str(agent.history[2].tool_results[0].content)
    assert "result cleared" in stub and str(stored[0].parent) in stub
    assert Path(stub.split(" at ")[1].split(";")[0]).read_text(encoding="utf-8") == huge


def test_a_loaded_skill_survives_compaction_twice(tmp_path: Path) -> None:
    from piton.core.activation import Activation, skill_block, skill_name

    skill = Activation(
        "lint", skill_block("lint", "/skills/lint", "LINT-RULES: run ruff before every commit.")
    )
    provider = ScriptedProvider()
    agent = make(provider, tmp_path)

    async def session() -> None:
        provider.add(reply("Linted. " + code(150, "a")))
        await _drain(agent.run("/lint src", skill=skill))
        for turn in range(2):
            provider.add(reply(f"More work {turn}. " + code(150, f"b{turn}")), summary)
            await _drain(agent.run(f"continue {turn}"))
            await _drain(agent.compact())

    asyncio.run(session())
    first = agent.history[0]
    assert first.text.startswith(SUMMARY_HEADER)
    blocks = [b.text for b in first.content if isinstance(b, TextBlock)]
    assert [skill_name(b) for b in blocks[1:]] == ["lint"], "in its own block, found again each time"
    assert "LINT-RULES: run ruff before every commit." in blocks[1]
    assert "<user-message>\n/lint src\n</user-message>" in blocks[0]
    assert_api_valid(agent.history)


def test_api_failures_while_summarising_do_not_switch_compaction_off(tmp_path: Path) -> None:
    overloaded = ProviderError("API error 529: Overloaded", kind="overloaded")
    provider = ScriptedProvider(
        reply("One. " + code(150, "a"), ToolCall("NoOp", {"text": "1"}), input_tokens=17_000),
        overloaded,
        reply("Two. " + code(150, "b"), ToolCall("NoOp", {"text": "2"}), input_tokens=17_500),
        overloaded,
        reply("Three.", ToolCall("NoOp", {"text": "3"}), input_tokens=18_000),
        summary,
        reply("Done."),
    )
    agent = make(provider, tmp_path, NoOp())
    events = collect(agent.run("start"))
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert notices == ["compaction failed: API error 529: Overloaded"] * 2, (
        "no 'stops trying' after API errors"
    )
    assert [e.phase for e in events if isinstance(e, Compacted)] == ["summary"]
    provider.assert_complete()


def test_a_result_that_quotes_a_preview_note_is_saved_itself(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.txt"
    other.write_text("unrelated")
    quoted = (
        code(40, "log")
        + f"\n[... 10 characters left out of 1,000. The whole result is saved as tr_abc at {other}: read it]"
    )

    async def show(_: str) -> str:
        return quoted

    steps = [reply(ToolCall("Show", {"text": str(i)}), input_tokens=n) for i, n in enumerate([1_000, 17_000])]
    provider = ScriptedProvider(*steps, reply("Done."))
    agent = make(provider, tmp_path, Probe("Show", show), keep_results=1)
    collect(agent.run("show"))
    stub = str(agent.history[2].tool_results[0].content)
    assert "result cleared" in stub and str(other) not in stub
    assert Path(stub.split(" at ")[1].split(";")[0]).read_text(encoding="utf-8") == quoted


def test_an_image_result_is_cleared_with_a_note_that_the_image_was_dropped(tmp_path: Path) -> None:
    from piton.core.context.summary import stub_tool_results
    from piton.core.conversation.messages import Base64ImageSource, ImageBlock, ToolResultBlock, ToolUseBlock

    use = ToolUseBlock(id="toolu_1", name="Read", input={"file_path": "a.png"})
    image = ImageBlock(source=Base64ImageSource(media_type="image/png", data="iVBORw0KGgo="))
    result = ToolResultBlock(tool_use_id="toolu_1", content=[TextBlock(text="The image a.png:"), image])
    history = [
        Message.user("look"),
        Message(role="assistant", content=[use]),
        Message(role="user", content=[result]),
    ]
    out, stubs = stub_tool_results(history, 0, FileResultStore(tmp_path))
    assert out[2].tool_results[0].content == stubs["toolu_1"]
    assert list(stubs) == ["toolu_1"]
    assert stubs["toolu_1"].startswith("[Read result cleared to save context: The image a.png:")
    assert "It held 1 image(s) or PDF(s), not kept: read the file again to see it." in stubs["toolu_1"]


class _Notebook:
    """A conversation that is not an agent: compaction needs no more than its narrow protocol."""

    def __init__(self, history: list[Message], provider: ScriptedProvider) -> None:
        self.history = history
        self.model = "claude-sonnet-5-5"
        self.provider = provider
        self.replaced: list[dict[str, Any]] = []

    def used(self) -> int:
        return sum(self.tokens(m) for m in self.history)

    def limit(self) -> int:
        return 1_000

    def tokens(self, message: Message) -> int:
        return len(json.dumps(message.to_wire())) // 4

    def replace(
        self, messages: list[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        self.history = messages
        self.replaced.append({"stubs": stubs, **info})

    def carry_over(self) -> list[str]:
        return ["The task list as it stands:\n[pending] ship the parser"]

    def ask(self, request: ModelRequest) -> Any:
        return self.provider.stream(request)


def test_compaction_works_on_any_conversation_through_its_narrow_protocol(tmp_path: Path) -> None:
    history = [
        m
        for i in range(6)
        for m in (
            Message.user(f"question {i}: " + code(20, f"q{i}")),
            Message(role="assistant", content=[TextBlock(text=f"answer {i}")]),
        )
    ]
    provider = ScriptedProvider(summary)
    notebook = _Notebook(history, provider)
    events = collect(Compactor(CompactionSettings(), FileResultStore(tmp_path / "r")).run(notebook, "manual"))
    assert [type(e) for e in events] == [Compacting, Compacted]
    done = events[1]
    assert isinstance(done, Compacted)
    first = notebook.history[0].text
    assert first.startswith(SUMMARY_HEADER) and "[pending] ship the parser" in first
    assert "<user-message>\nquestion 0:" in first, "what the user wrote survives verbatim"
    assert notebook.replaced == [{"stubs": None, "trigger": "manual", "pre_tokens": done.pre_tokens}]
    assert done.post_tokens < done.pre_tokens and done.model == "claude-sonnet-5-5"
    provider.assert_complete()


def test_a_retry_of_the_summary_request_is_announced(tmp_path: Path, fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(
        reply("Looked at it."),
        reply("And at that."),
        HttpError(529, "overloaded_error", "Overloaded"),
        reply("## Summary\nThe parser."),
    )
    provider = AnthropicProvider(api_key="test-key", base_url=fake_api.base_url, backoff_s=0.01)
    agent = make(provider, tmp_path)  # type: ignore[arg-type]

    async def go() -> list[Any]:
        await _drain(agent.run("look at the lexer"))
        await _drain(agent.run("and at the parser"))
        events = [e async for e in agent.compact()]
        await provider.aclose()
        return events

    events = asyncio.run(go())
    [retry] = [e for e in events if isinstance(e, StreamRetry)]
    assert retry.status == 529 and retry.error_type == "overloaded_error"
    assert isinstance(events[-1], Compacted) and events[-1].phase == "summary"
