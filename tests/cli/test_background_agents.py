"""Background agents in `piton -p` against the fake API: Task with run_in_background returns at
once, the agents run beside the parent and each other, each report reaches the parent once (in its
turn, or as a turn of its own while the run waits), forks share the parent's cached prefix,
SendMessage goes on with an agent that remembers, TaskStop stops one, and the caps refuse a
fan-out in words.

The fake serves requests in threads, so a route may hold one agent's request until another agent
has been answered: that fixes the order agents finish in without a single sleep."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import Reply, Thinking, ToolCall, reply
from tests.fakes.cache import PromptCache
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

WAIT_S = 30.0  # an event a route waits on; never reached when things work


def first_text(body: dict[str, Any]) -> str:
    """The first user message's text: who is asking (the parent's prompt, or an agent's task)."""
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


def texts(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


def notifications(body: dict[str, Any]) -> list[str]:
    """The results of the task notifications the parent's request carries, in order."""
    return re.findall(r"<result>(.*?)</result>", texts(body))


def background(name: str, prompt: str, **extra: Any) -> ToolCall:
    given = {"description": f"job {name}", "prompt": prompt, "run_in_background": True, "name": name}
    return ToolCall("Task", {**given, **extra})


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicAPI]:
    with FakeAnthropicAPI(cache=PromptCache()) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake
        assert not fake.unexpected and not fake.rejections, fake.rejections


class Router:
    """Answers each request from its body: the parent by `parent`, each agent by its task's text."""

    def __init__(self, parent: Callable[[dict[str, Any]], Reply], agents: dict[str, Callable[[], Reply]]):
        self.parent, self.agents = parent, agents
        self.parent_bodies: list[dict[str, Any]] = []
        self.agent_bodies: dict[str, list[dict[str, Any]]] = {k: [] for k in agents}

    def __call__(self, body: dict[str, Any]) -> Reply:
        asker = first_text(body)
        for key, answer in self.agents.items():
            if key in asker:
                self.agent_bodies[key].append(body)
                return answer()
        self.parent_bodies.append(body)
        return self.parent(body)


def test_three_background_agents_finish_out_of_order_each_reported_once(
    api: FakeAnthropicAPI, project: Path
) -> None:
    heard = {k: threading.Event() for k in ("A", "B", "C")}  # the parent has had the agent's report

    def agent(key: str, after: str | None) -> Callable[[], Reply]:
        def answer() -> Reply:
            if after is not None:  # finish only once the parent has heard from the other agent
                assert heard[after].wait(WAIT_S)
            return reply(f"report {key}")

        return answer

    def parent(body: dict[str, Any]) -> Reply:
        reports = notifications(body)
        for report in reports:
            heard[report.removeprefix("report ")].set()
        if len(router.parent_bodies) == 1:
            return reply(*(background(k, f"TASK-{k}: look") for k in ("A", "B", "C")))
        if len(router.parent_bodies) == 2:  # the parent keeps working while they run
            return reply(ToolCall("Bash", {"command": "echo still working"}))
        return reply("all three reported" if len(reports) == 3 else "waiting")

    router = Router(
        parent, {"TASK-A": agent("A", "B"), "TASK-B": agent("B", "C"), "TASK-C": agent("C", None)}
    )
    api.add(*[router] * 12)
    done = piton_here("-p", "PARENT: three jobs", "--output-format", "json", "--allowedTools", "Bash(echo:*)")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["result"] == "all three reported"
    last = router.parent_bodies[-1]
    assert notifications(last) == ["report C", "report B", "report A"], "in the order they finished"
    assert texts(last).count("<task-id>") == 3, "each report reaches the parent once"
    launched = json.dumps(router.parent_bodies[1]["messages"][-1])
    assert launched.count("started in the background") == 3 and "still working" not in launched
    assert "still working" in texts(router.parent_bodies[2]), "the parent's own work went on meanwhile"
    assert result["num_turns"] >= 4 and result["total_cost_usd"] > 0


def test_stream_json_reports_each_background_agents_life_and_one_result(
    api: FakeAnthropicAPI, project: Path
) -> None:
    def parent(body: dict[str, Any]) -> Reply:
        if len(router.parent_bodies) == 1:
            return reply(background("solo", "TASK-SOLO: count"))
        return reply("solo said 3" if notifications(body) else "waiting for solo")

    router = Router(parent, {"TASK-SOLO": lambda: reply("3")})
    api.add(*[router] * 5)
    done = piton_here("-p", "PARENT: count", "--output-format", "stream-json", "--verbose")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    tasks = [line for line in lines if line.get("subtype", "").startswith("task_")]
    assert [t["subtype"] for t in tasks] == ["task_started", "task_updated", "task_notification"]
    started, _, ended = tasks
    assert started["is_backgrounded"] is True and started["prompt"] == "TASK-SOLO: count"
    assert (ended["status"], ended["summary"]) == ("completed", "3")
    results = [line for line in lines if line["type"] == "result"]
    assert len(results) == 1 and results[0]["result"] == "solo said 3" and lines[-1] is results[0]


def test_send_message_goes_on_with_an_agent_that_remembers(api: FakeAnthropicAPI, project: Path) -> None:
    def scout() -> Reply:
        asked = router.agent_bodies["TASK-SCOUT"][-1]
        return reply("noted 7" if len(asked["messages"]) == 1 else "it was 7")

    def parent(body: dict[str, Any]) -> Reply:
        step = len(router.parent_bodies)
        if step == 1:
            return reply(
                ToolCall(
                    "Task", {"description": "remember", "prompt": "TASK-SCOUT: remember 7", "name": "scout"}
                )
            )
        if step == 2:
            return reply(ToolCall("SendMessage", {"to": "scout", "message": "which number?"}))
        return reply(f"scout: {notifications(body)[-1]}" if notifications(body) else "asked")

    router = Router(parent, {"TASK-SCOUT": scout})
    api.add(*[router] * 6)
    done = piton_here("-p", "PARENT: ask the scout twice")
    assert (done.returncode, done.stdout) == (0, "scout: it was 7\n"), done.stderr
    first, again = router.agent_bodies["TASK-SCOUT"]
    assert (
        texts(again).count("remember 7") == 1
        and "noted 7" in texts(again)
        and "which number?" in texts(again)
    )
    assert again["system"] == first["system"], "the same agent, not a new one"


def test_a_fork_shares_the_parents_cached_prefix(api: FakeAnthropicAPI, project: Path) -> None:
    def parent(body: dict[str, Any]) -> Reply:  # the fork asks as the parent: its first message is the same
        if "You are a fork" in texts(body):
            return reply("fork did it")
        if len(router.parent_bodies) == 1:
            fork = {"description": "side", "prompt": "FORK-TASK: check", "subagent_type": "fork"}
            return reply(Thinking("A fork knows all this."), ToolCall("Task", fork))
        return reply("forked and done")

    router = Router(parent, {})
    api.add(*[router] * 4)
    done = piton_here("-p", "PARENT: fork once " + "context " * 900)
    assert (done.returncode, done.stdout) == (0, "forked and done\n"), done.stderr
    first, fork, after = router.parent_bodies
    assert "FORK-TASK" in texts(fork) and "fork did it" in texts(after)
    assert (fork["system"], fork["tools"]) == (first["system"], first["tools"])
    assert first_text(fork) == first_text(first)
    cache = PromptCache()
    cache.apply(first)
    assert cache.apply(fork).cache_read_input_tokens > 0, "the fork reads what the parent's request wrote"


def test_task_stop_stops_a_running_agent_and_says_so(api: FakeAnthropicAPI, project: Path) -> None:
    release = threading.Event()

    def slow() -> Reply:
        release.wait(WAIT_S)  # answered only when the test ends: the agent is stopped first
        return reply("too late")

    def parent(body: dict[str, Any]) -> Reply:
        step = len(router.parent_bodies)
        if step == 1:
            return reply(background("slow", "TASK-SLOW: wait"))
        if step == 2:
            return reply(ToolCall("TaskStop", {"task_id": "slow"}))
        return reply("stopped it" if "was stopped" in texts(body) else "stopping")

    router = Router(parent, {"TASK-SLOW": slow})
    api.add(*[router] * 5)
    try:
        done = piton_here("-p", "PARENT: start and stop")
    finally:
        release.set()
    assert (done.returncode, done.stdout) == (0, "stopped it\n"), done.stderr
    assert "Stopped agent slow." in texts(router.parent_bodies[2])
    assert "<status>stopped</status>" in texts(router.parent_bodies[-1])


def test_the_caps_refuse_a_fan_out_in_words(api: FakeAnthropicAPI, project: Path) -> None:
    settings = {"agents": {"maxRunning": 1, "maxTotal": 2}}

    def parent(body: dict[str, Any]) -> Reply:
        step = len(router.parent_bodies)
        if step == 1:
            return reply(*(background(k, f"TASK-{k}: go") for k in ("P", "Q")))
        if step in (2, 3):  # the second agent runs; the third passes the total
            return reply(ToolCall("Task", {"description": "more", "prompt": f"TASK-{'RS'[step - 2]}: go"}))
        return reply("capped" if len(notifications(body)) == 1 else "waiting")

    def did(key: str) -> Callable[[], Reply]:
        return lambda: reply(f"did {key}")

    router = Router(parent, {f"TASK-{k}": did(k) for k in "PQRS"})
    api.add(*[router] * 10)
    done = piton_here("-p", "PARENT: fan out", "--settings", json.dumps(settings))
    assert (done.returncode, done.stdout) == (0, "capped\n"), done.stderr
    fanned = json.dumps(router.parent_bodies[1]["messages"][-1])
    assert (
        fanned.count("started in the background") == 1
        and "1 background agents are running, the cap" in fanned
    )
    assert "did R" in json.dumps(router.parent_bodies[2]["messages"][-1])
    assert "This session has started 2 agents, the cap" in json.dumps(router.parent_bodies[3]["messages"][-1])
    assert router.agent_bodies["TASK-Q"] == router.agent_bodies["TASK-S"] == [], "refused agents never ran"


def test_rules_and_hooks_that_name_claude_codes_agent_tool_govern_task(
    api: FakeAnthropicAPI, project: Path
) -> None:
    seen = project / "hook-saw"
    hook = {"matcher": "Agent", "hooks": [{"type": "command", "command": f"cat > {seen}"}]}

    def parent(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) == 1:
            return reply(ToolCall("Task", {"description": "d", "prompt": "TASK-X: x"}))
        return reply("done")

    router = Router(parent, {"TASK-X": lambda: reply("looked")})
    api.add(*[router] * 3)
    done = piton_here("-p", "PARENT: delegate", "--settings", json.dumps({"hooks": {"PreToolUse": [hook]}}))
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    assert json.loads(seen.read_text())["tool_name"] == "Task", "the hook named Agent ran for Task"
    api.add(*[router] * 2)
    denied = piton_here("-p", "PARENT: delegate", "--disallowedTools", "Agent")
    assert "Task" not in [t["name"] for t in router.parent_bodies[-2]["tools"]], (
        "a rule denying Agent denies Task"
    )
    assert "Unknown tool 'Task'" in texts(router.parent_bodies[-1]) and denied.stdout == "done\n"
    assert len(router.agent_bodies["TASK-X"]) == 1, "the subagent ran the first time only"


def test_the_agent_sdk_follows_a_background_agent_to_its_report(api: FakeAnthropicAPI, project: Path) -> None:
    """The real SDK's `query()`: it closes its input after the first result; the report still comes,
    as Claude Code's does, in a turn of its own with its own result."""
    import asyncio
    import sys

    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, TaskNotificationMessage, query

    def parent(body: dict[str, Any]) -> Reply:
        if len(router.parent_bodies) == 1:
            return reply(background("bg", "TASK-BG: sum"))
        return reply(f"bg: {notifications(body)[-1]}" if notifications(body) else "started bg")

    router = Router(parent, {"TASK-BG": lambda: reply("42")})
    api.add(*[router] * 4)
    cli = str(Path(sys.executable).parent / "piton")

    async def run() -> list[Any]:
        options = ClaudeAgentOptions(cli_path=cli, cwd=str(project))
        return [m async for m in query(prompt="PARENT: in the background", options=options)]

    messages = asyncio.run(asyncio.wait_for(run(), 60))
    results = [m.result for m in messages if isinstance(m, ResultMessage)]
    assert results[-1] == "bg: 42" and results[0] == "started bg", results
    [ended] = [m for m in messages if isinstance(m, TaskNotificationMessage)]
    assert (ended.status, ended.summary) == ("completed", "42")


def test_an_agent_writing_a_file_another_agent_changed_is_told(api: FakeAnthropicAPI, project: Path) -> None:
    write = ToolCall("Write", {"file_path": "notes.txt", "content": "from the main agent\n"})

    def agent(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) == 1:
            return reply(ToolCall("Read", {"file_path": "notes.txt"}))
        if len(body["messages"]) == 3:
            return reply(ToolCall("Write", {"file_path": "notes.txt", "content": "from the agent\n"}))
        return reply("wrote notes.txt")

    def parent(body: dict[str, Any]) -> Reply:
        step = len(router.parent_bodies)
        if step == 1:
            return reply(write)
        if step == 2:
            return reply(ToolCall("Task", {"description": "w", "prompt": "TASK-W: write", "name": "scribe"}))
        if step == 3:
            return reply(ToolCall("Read", {"file_path": "notes.txt"}))
        if step == 4:
            return reply(ToolCall("Write", {"file_path": "notes.txt", "content": "the main agent again\n"}))
        return reply("done")

    router = Router(parent, {})
    sub: list[dict[str, Any]] = []

    def route(body: dict[str, Any]) -> Reply:
        if "TASK-W" in json.dumps(body["messages"][0]):
            sub.append(body)
            return agent(body)
        return router(body)

    api.add(*[route] * 9)
    done = piton_here("-p", "PARENT: write", "--permission-mode", "acceptEdits")
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    assert "Note: the main agent changed this file" in texts(sub[-1]), (
        "the agent hears of the main agent's write"
    )
    assert "Note: agent scribe (completed) changed this file" in texts(router.parent_bodies[-1])
    assert "Note:" not in texts(router.parent_bodies[1]), "a first write says nothing"


def test_an_agent_of_an_earlier_run_of_the_session_goes_on_from_its_transcript(
    api: FakeAnthropicAPI, project: Path
) -> None:
    said: dict[str, str] = {}

    def scout() -> Reply:
        asked = router.agent_bodies["TASK-SCOUT"][-1]
        return reply("noted 7" if len(asked["messages"]) == 1 else "it was 7")

    def parent(body: dict[str, Any]) -> Reply:
        first, heard = first_text(body), notifications(body)
        if "PARENT: first" in first and len(body["messages"]) == 1:
            return reply(ToolCall("Task", {"description": "remember", "prompt": "TASK-SCOUT: remember 7"}))
        if "PARENT: first" in first and "second run" not in texts(body):
            said["id"] = re.findall(r"\(subagent (agent-[0-9a-f]{8})", texts(body))[-1]
            return reply("first run done")
        if heard:
            return reply(f"scout: {heard[-1]}")
        if '"name": "SendMessage"' not in texts(body):
            return reply(ToolCall("SendMessage", {"to": said["id"], "message": "which number?"}))
        return reply("asked")

    router = Router(parent, {"TASK-SCOUT": scout})
    api.add(*[router] * 8)
    first = json.loads(piton_here("-p", "PARENT: first", "--output-format", "json").stdout)
    done = piton_here("-p", "second run: ask the scout again", "--resume", first["session_id"])
    assert (done.returncode, done.stdout) == (0, "scout: it was 7\n"), done.stderr
    again = router.agent_bodies["TASK-SCOUT"][-1]
    assert "remember 7" in texts(again) and "noted 7" in texts(again), "it remembers the earlier run"
