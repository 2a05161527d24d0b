"""Context management: what prompt caching saves over a long tool loop, and what token accounting
and compaction cost as the history grows.

1. A 30-turn tool loop runs through the real agent, SDK and HTTP against the fake API, which applies
   the API's caching rules (prefix hashes at breakpoints, 20-block lookback, 1,024-token minimum).
   The requests it sent are then replayed through a fresh cache with other breakpoint placements,
   so every row prices the same conversation; the baseline is no caching at all.
2. Accounting: the cost per turn of knowing how full the window is, with histories of 10 to 1,000
   messages, against re-estimating the whole history each turn.
3. Phase 1 of compaction (clearing old tool results, no API call) on the same histories.

    python benchmarks/bench_context.py
"""

from __future__ import annotations

import asyncio
import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from piton.core.context.meter import ContextMeter, TokenCounter  # noqa: E402
from piton.core.context.result_store import FileResultStore  # noqa: E402
from piton.core.context.summary import stub_tool_results  # noqa: E402
from piton.core.conversation.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock  # noqa: E402
from piton.core.conversation.usage import Usage  # noqa: E402
from piton.core.models import model_info  # noqa: E402
from piton.testing.script import Reply, ToolCall, reply  # noqa: E402
from tests.fakes.cache import PromptCache  # noqa: E402
from tests.fakes.fake_api import FakeAnthropicAPI  # noqa: E402

MODEL = "claude-sonnet-5-5"
TURNS = 30
WIDE_EVERY = 7  # every seventh turn reads twelve files at once: more new blocks than the lookback
WIDE = 12
SIZES = (10, 100, 1_000)
ACCOUNTING_TURNS = 200


# -- 1. caching ------------------------------------------------------------------------------------


def source(i: int) -> str:
    lines = [
        f"def handler_{i}_{n}(request):\n    return respond(request, code={n})  # file {i}" for n in range(60)
    ]
    return "\n".join(lines) + "\n"


def script() -> list[Reply]:
    steps = []
    for turn in range(TURNS - 1):
        if turn % WIDE_EVERY == WIDE_EVERY - 1:
            calls = [ToolCall("Read", {"file_path": f"src/m{turn}_{k}.py"}) for k in range(WIDE)]
            steps.append(reply(f"Reading the {turn}th group together.", *calls, output_tokens=300))
        else:
            call = ToolCall("Read", {"file_path": f"src/m{turn}.py"})
            steps.append(reply(f"Turn {turn}: the next file.", call, output_tokens=120))
    steps.append(reply("The handlers all respond the same way.", output_tokens=200))
    return steps


def tool_loop(project: Path) -> tuple[list[dict[str, Any]], list[Usage]]:
    """Run the loop through `build_runtime` (the real tools, system prompt and provider)."""
    from piton.core.conversation.events import MessageDone
    from piton.core.options import RunOptions
    from piton.core.providers.anthropic import AnthropicProvider
    from piton.runtime import build_runtime

    for turn in range(TURNS):
        (project / "src" / f"m{turn}.py").write_text(source(turn))
        for k in range(WIDE):
            (project / "src" / f"m{turn}_{k}.py").write_text(source(turn * 10 + k))
    with FakeAnthropicAPI(cache=PromptCache()) as fake:
        fake.add(*script())
        provider = AnthropicProvider(base_url=fake.base_url, api_key="test-key", backoff_s=0.01)
        runtime = build_runtime(RunOptions(cwd=project, model=MODEL), provider)

        async def go() -> list[Usage]:
            try:
                return [
                    e.usage
                    async for e in runtime.agent.run("Read every module in src/")
                    if isinstance(e, MessageDone)
                ]
            finally:
                await provider.aclose()

        usages = asyncio.run(go())
        fake.assert_complete()
        return fake.bodies, usages


def placed(body: dict[str, Any], strategy: str) -> dict[str, Any]:
    """`body` with its breakpoints moved to another strategy's places."""
    out = copy.deepcopy(body)
    marked_messages = [
        (i, j)
        for i, m in enumerate(out["messages"])
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    if strategy == "piton":
        return out
    for i, j in marked_messages:
        out["messages"][i]["content"][j].pop("cache_control")
    if strategy == "none":
        for block in [*out.get("system", []), *out.get("tools", [])]:
            block.pop("cache_control", None)
    elif strategy == "newest message":
        last = out["messages"][-1]["content"][-1]
        last["cache_control"] = {"type": "ephemeral"}
    return out


def replay(bodies: list[dict[str, Any]], strategy: str) -> tuple[int, int, int]:
    cache = PromptCache()
    read = written = plain = 0
    for body in bodies:
        usage = cache.apply(placed(body, strategy))
        read += usage.cache_read_input_tokens
        written += usage.cache_creation_input_tokens
        plain += usage.input_tokens
    return read, written, plain


def caching_table(project: Path) -> None:
    bodies, usages = tool_loop(project)
    prices = model_info(MODEL).prices
    output = sum(u.output_tokens for u in usages) * prices.output
    live = sum(u.cache_read_input_tokens for u in usages)
    rows = [
        ("no caching", "none"),
        ("tools+system only", "system only"),
        ("+ newest message", "newest message"),
        ("+ previous request end", "piton"),
    ]
    title = f"Prompt caching over a {TURNS}-turn tool loop ({len(bodies)} requests"
    print(f"{title}; every {WIDE_EVERY}th turn reads {WIDE} files)\n")
    header = ("breakpoints", "prompt tokens", "cache read", "read share", "cache write", "$", "vs none")
    row = "{:<24} {:>14} {:>11} {:>11} {:>12} {:>8} {:>8}"
    print(row.format(*header))
    baseline = 0.0
    for label, strategy in rows:
        read, written, plain = replay(bodies, strategy)
        total = read + written + plain
        dollars = (
            plain * prices.input + written * prices.cache_write + read * prices.cache_read + output
        ) / 1e6
        baseline = baseline or dollars
        cells = (f"{total:,}", f"{read:,}", f"{read / total:.3f}", f"{written:,}", f"{dollars:.4f}")
        print(row.format(label, *cells, f"{dollars / baseline:.2f}"))
    replayed = replay(bodies, "piton")[0]
    print(f"\n(read from cache: {live:,} tokens as the live run reported, {replayed:,} in the replay)")


# -- 2. accounting, 3. phase 1 ---------------------------------------------------------------------


def turn_messages(i: int) -> list[Message]:
    use = ToolUseBlock(id=f"toolu_{i:06d}", name="Read", input={"file_path": f"src/m{i}.py"})
    result = ToolResultBlock(tool_use_id=use.id, content=source(i)[:2_000])
    return [
        Message(role="assistant", content=[TextBlock(text=f"Step {i}."), use]),
        Message(role="user", content=[result]),
    ]


def history_of(size: int) -> list[Message]:
    """A prompt and then tool turns: `size` messages or one more, ending with tool results."""
    out = [Message.user("Read every module in src/")]
    for i in range(size // 2):
        out += turn_messages(i)
    return out


def accounting(size: int) -> tuple[float, float]:
    """Seconds per turn: the meter (reported usage plus estimates of what is new), and a full
    re-estimate of the history each turn."""
    system, tools = "You are Piton." * 200, [{"name": "Read", "description": "Read a file." * 50}]
    history = history_of(size)
    meter = ContextMeter()
    meter.used(system, tools, history)  # the first request estimates everything once
    meter.observe(Usage(input_tokens=50_000, output_tokens=100), len(history))
    started = time.perf_counter()
    for i in range(ACCOUNTING_TURNS):
        history += turn_messages(100_000 + i)
        meter.used(system, tools, history)
        meter.observe(Usage(input_tokens=50_000 + i, output_tokens=100), len(history))
        del history[-2:]  # the history keeps its size, as in a compacted session
    metered = (time.perf_counter() - started) / ACCOUNTING_TURNS
    naive_turns = max(3, ACCOUNTING_TURNS * 10 // size)
    started = time.perf_counter()
    for i in range(naive_turns):
        history += turn_messages(200_000 + i)
        TokenCounter().total(history)
        del history[-2:]
    naive = (time.perf_counter() - started) / naive_turns
    return metered, naive


def phase_one(size: int) -> float:
    history = history_of(size)
    with tempfile.TemporaryDirectory() as root:
        store = FileResultStore(Path(root))
        started = time.perf_counter()
        stub_tool_results(history, 3, store)
        return time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")  # sessions of this run stay here
        project = Path(tmp) / "project"
        (project / "src").mkdir(parents=True)
        caching_table(project)

    print("\nToken accounting per turn as the history grows (median of 3)\n")
    row = "{:>9} {:>14} {:>25} {:>8} {:>12}"
    print(row.format("messages", "meter µs/turn", "full re-estimate ms/turn", "ratio", "meter vs 10"))
    first = 0.0
    for size in SIZES:
        runs = [accounting(size) for _ in range(3)]
        metered = statistics.median(r[0] for r in runs)
        naive = statistics.median(r[1] for r in runs)
        first = first or metered
        cells = (
            f"{metered * 1e6:.0f}",
            f"{naive * 1e3:.2f}",
            f"{naive / metered:.0f}",
            f"{metered / first:.2f}",
        )
        print(row.format(f"{size:,}", *cells))

    print("\nCompaction phase 1 (clear old tool results, save them to the store; no API call)\n")
    print(f"{'messages':>9} {'ms':>8}")
    for size in SIZES:
        print(f"{size:>9,} {statistics.median(phase_one(size) for _ in range(3)) * 1e3:>8.1f}")


if __name__ == "__main__":
    main()
