"""Tool speed: Glob and Grep over large trees against raw ripgrep and Edit of a 50 MB file against
`sed -i`, in CPU time (benchmarks/tool_scale.py); the sandbox's cost per Bash call against a plain
`bash -c true`; three read-only Bash calls of one reply through the agent against the same calls run
one by one; and Read of a 100,000-line file against a bare Python read of the same lines.

    python benchmarks/bench_tools.py [files ...]  (default trees of 50,000 and 200,000 generated files,
                                                   kept in /var/tmp)
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.tool_scale import CpuMeter, Row, edit_rows, search_rows  # noqa: E402
from piton.builtin_tools.bash import Bash, BashInput  # noqa: E402
from piton.builtin_tools.read import Read  # noqa: E402
from piton.core.conversation.messages import ToolUseBlock  # noqa: E402
from piton.core.safety.policy import SandboxPolicy  # noqa: E402
from piton.core.safety.sandbox import NoSandbox, make_sandbox  # noqa: E402
from piton.core.safety.shell import run_shell  # noqa: E402
from piton.core.tools import ToolContext, ToolRegistry  # noqa: E402

REPEATS = 7


def tree(files: int) -> Path:
    """A generated source tree, made once and reused (its name says its size)."""
    root = Path(tempfile.gettempdir().replace("/tmp", "/var/tmp")) / f"piton-bench-tree-{files}"
    done = root / ".complete"
    if done.exists():
        return root
    per_dir = 100
    for i in range(files):
        folder = root / f"pkg{i // per_dir:04d}"
        if i % per_dir == 0:
            folder.mkdir(parents=True, exist_ok=True)
        needle = "NEEDLE_TOKEN" if i % 97 == 0 else "ordinary"
        body = "".join(
            f"def function_{i}_{n}(x):\n    return x + {n}  # {needle if n == 3 else 'filler'}\n"
            for n in range(8)
        )
        (folder / f"module_{i}.py").write_text(body)
    done.touch()
    return root


def median_ms(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    fn()  # warm caches
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def tool_call(tool: Any, ctx: ToolContext, **tool_input: Any) -> Any:
    block = ToolUseBlock(id="bench", name=tool.name, input=tool_input)
    result = asyncio.run(ToolRegistry([tool]).call(block, ctx))
    assert not result.is_error, result.content
    return result


def shell_rows(calls: int = 30) -> list[tuple[str, float]]:
    work = Path(tempfile.mkdtemp(dir="/var/tmp"))
    policy = SandboxPolicy.create("workspace-write", work)
    bwrap = make_sandbox(policy)
    assert bwrap.unavailable_reason() is None, bwrap.unavailable_reason()

    async def many(run: Callable[[], Any]) -> float:
        started = time.perf_counter()
        for _ in range(calls):
            await run()
        return (time.perf_counter() - started) / calls * 1000

    async def plain() -> None:
        process = await asyncio.create_subprocess_exec("bash", "-c", "true")
        await process.wait()

    def harness(sandbox: Any) -> Callable[[], Any]:
        return lambda: run_shell("true", cwd=work, sandbox=sandbox, timeout_s=30)

    return [
        ("bash -c true (baseline)", asyncio.run(many(plain))),
        ("Bash harness, no sandbox", asyncio.run(many(harness(NoSandbox(policy))))),
        ("Bash harness, bwrap sandbox", asyncio.run(many(harness(bwrap)))),
    ]


class _OneByOne(Bash):
    """Bash whose calls never run side by side: the same commands, in order (the baseline)."""

    def is_concurrency_safe(self, args: BashInput, ctx: ToolContext) -> bool:
        return False


def concurrency_rows(calls: int = 3, seconds: float = 1.0) -> list[tuple[str, float]]:
    """Wall time of one reply holding `calls` read-only Bash calls (`sleep; echo`), through the agent
    with the real sandbox and a scripted model, with and without running them side by side."""
    from piton.core.agent import Agent
    from piton.core.agent_parts import AgentConfig, AgentParts
    from piton.testing import ScriptedProvider, ToolCall, reply

    work = Path(tempfile.mkdtemp(dir="/var/tmp"))

    def run(tool: Bash) -> float:
        uses = [ToolCall("Bash", {"command": f"sleep {seconds}; echo {n}"}) for n in range(calls)]
        provider = ScriptedProvider(reply(*uses), reply("done"))
        config = AgentConfig(model="claude-sonnet-5-5", system_prompt="", cwd=work, session_id="bench")
        context = ToolContext(
            cwd=work, session_id="bench", policy=SandboxPolicy.create("workspace-write", work)
        )
        agent = Agent(provider, ToolRegistry([tool]), config, parts=AgentParts(context=context))

        async def drain() -> None:
            async for _ in agent.run("go"):
                pass

        started = time.perf_counter()
        asyncio.run(drain())
        return (time.perf_counter() - started) * 1000

    return [
        (f"{calls} calls one by one (baseline)", statistics.median(run(_OneByOne()) for _ in range(3))),
        (f"{calls} calls side by side (Piton)", statistics.median(run(Bash()) for _ in range(3))),
    ]


def read_rows() -> list[tuple[str, float, float]]:
    work = Path(tempfile.mkdtemp())
    big = work / "big.py"
    big.write_text("".join(f"value_{i} = compute({i}, 'some text on the line')\n" for i in range(100_000)))
    ctx = ToolContext(cwd=work, session_id="bench", policy=SandboxPolicy.create("workspace-write", work))

    def bare(start: int, count: int) -> list[str]:
        with big.open(encoding="utf-8") as f:
            lines = f.readlines()[start - 1 : start - 1 + count]
        return [f"{start + n:>6}\t{line.rstrip()}" for n, line in enumerate(lines)]

    rows = []
    for label, offset in (("first 2,000 lines", 1), ("lines 98,001-100,000", 98_001)):
        ours = median_ms(
            functools.partial(tool_call, Read(), ctx, file_path=str(big), offset=offset, limit=2000)
        )
        base = median_ms(functools.partial(bare, offset, 2000))
        rows.append((label, base, ours))
    return rows


def print_cpu_rows(title: str, rows: list[Row]) -> None:
    print(f"{title}\n")
    print(f"{'call':<30} {'floor':<32} {'floor CPU':>9} {'tool CPU':>9} {'ratio':>6} {'tool wall':>9}")
    for label, floor_label, floor, ours, wall in rows:
        print(f"{label:<30} {floor_label:<32} {floor:>9.1f} {ours:>9.1f} {ours / floor:>6.2f} {wall:>9.1f}")
    print()


def main() -> None:
    sizes = [int(arg) for arg in sys.argv[1:]] or [50_000, 200_000]
    meter = CpuMeter()
    try:
        if not meter.counts_sandbox:
            print("(no cpuacct cgroup of our own: CPU run inside the sandbox is not counted)\n")
        for files in sizes:
            rows = search_rows(meter, tree(files))
            print_cpu_rows(f"Search over {files:,} files (CPU ms, median of 5)", rows)
        print_cpu_rows("Edit of a 50 MB file (CPU ms, median of 5)", edit_rows(meter))
    finally:
        meter.close()
    print("One shell command, start to finish (mean of 30 calls, ms)\n")
    shells = shell_rows()
    print(f"{'runner':<30} {'ms/call':>8} {'overhead':>9}")
    for label, ms in shells:
        print(f"{label:<30} {ms:>8.1f} {ms - shells[0][1]:>+9.1f}")
    print("\nRead-only Bash calls of one reply, `sleep 1; echo n`, through the agent (median of 3, ms)\n")
    calls = concurrency_rows()
    print(f"{'calls':<36} {'ms':>8} {'ratio':>6}")
    for label, ms in calls:
        print(f"{label:<36} {ms:>8.0f} {ms / calls[0][1]:>6.2f}")
    print(f"\nRead of a 100,000-line file (median of {REPEATS}, ms)\n")
    print(f"{'range':<22} {'bare Python':>12} {'Read tool':>10} {'ratio':>6}")
    for label, bare, ours in read_rows():
        print(f"{label:<22} {bare:>12.1f} {ours:>10.1f} {ours / bare:>6.2f}")


if __name__ == "__main__":
    main()
