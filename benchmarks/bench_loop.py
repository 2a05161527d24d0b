"""Agent-loop overhead per step, and the memory of long runs.

Each step is one model turn that calls a no-op tool, served by the scripted provider (no HTTP).
The baseline is the same provider streaming the same replies with no agent around it, measured in
the same run; the difference divided by the steps is what the loop itself costs per step.

    python benchmarks/bench_loop.py
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from piton.core.conversation.events import Result  # noqa: E402
from piton.core.conversation.messages import Message  # noqa: E402
from piton.core.conversation.session import SessionStore  # noqa: E402
from piton.core.providers import ModelRequest  # noqa: E402
from piton.testing.script import ToolCall, reply  # noqa: E402
from piton.testing.scripted import ScriptedProvider  # noqa: E402
from tests.fakes.tools import NoOp, make_agent  # noqa: E402

STEPS = (10, 100, 1000)
REPEATS = 5
MEMORY_PROBE = """
import asyncio, resource, sys, tracemalloc
sys.path.insert(0, "benchmarks")
import bench_loop
tracemalloc.start()
if {steps}:
    asyncio.run(bench_loop.agent_run({steps}, with_session=True))
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(rss_mb, tracemalloc.get_traced_memory()[1] / 2**20)
"""


def script(steps: int) -> ScriptedProvider:
    replies = [reply("Checking.", ToolCall("NoOp", {"text": f"step {i}"})) for i in range(steps - 1)]
    return ScriptedProvider(*replies, reply("Done."), record=False)


async def baseline(steps: int) -> float:
    provider = script(steps)
    request = ModelRequest(model="claude-sonnet-5-5", system="s", messages=[Message.user("go")])
    started = time.perf_counter()
    for _ in range(steps):
        async for _event in provider.stream(request):
            pass
    return time.perf_counter() - started


async def agent_run(steps: int, with_session: bool) -> float:
    agent = make_agent(script(steps), NoOp())
    result = None
    with tempfile.TemporaryDirectory() as tmp:
        if with_session:
            agent.transcript = SessionStore(Path(tmp)).create(Path(tmp), "claude-sonnet-5-5")
        started = time.perf_counter()
        async for event in agent.run("go"):
            result = event
        elapsed = time.perf_counter() - started
    assert isinstance(result, Result) and result.num_turns == steps, result
    return elapsed


def median_of(fn: Callable[..., Coroutine[Any, Any, float]], *args: object) -> float:
    return statistics.median(asyncio.run(fn(*args)) for _ in range(REPEATS))


def memory(steps: int) -> tuple[float, float]:
    """Peak RSS (MB) of a fresh process that runs `steps` steps, and the Python heap's peak (MB)."""
    code = MEMORY_PROBE.format(steps=steps)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    rss, heap = out.stdout.split()
    return float(rss), float(heap)


def main() -> None:
    print(f"Agent loop overhead (median of {REPEATS}; scripted provider, no-op tool)\n")
    header = ("steps", "baseline ms", "agent ms", "+session ms", "loop µs/step", "+session µs/step")
    print("{:>6} {:>12} {:>10} {:>12} {:>13} {:>17}".format(*header))
    for steps in STEPS:
        base = median_of(baseline, steps)
        plain = median_of(agent_run, steps, False)
        logged = median_of(agent_run, steps, True)
        per, per_logged = (plain - base) / steps * 1e6, (logged - base) / steps * 1e6
        row = (steps, base * 1e3, plain * 1e3, logged * 1e3, per, per_logged)
        print("{:>6} {:>12.1f} {:>10.1f} {:>12.1f} {:>13.0f} {:>17.0f}".format(*row))

    print("\nMemory of a whole run with its session log (a fresh process each)\n")
    print(f"{'run':<16} {'peak RSS MB':>12} {'ratio':>6} {'heap peak MB':>13}")
    idle = 0.0
    for steps in (0, 10, 1000, 5000):
        rss, heap = memory(steps)
        idle = idle or rss
        label = "imports only" if steps == 0 else f"{steps:,} steps"
        print(f"{label:<16} {rss:>12.1f} {rss / idle:>6.2f} {heap:>13.2f}")


if __name__ == "__main__":
    main()
