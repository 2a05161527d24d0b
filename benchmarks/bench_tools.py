"""Tool speed: Grep over a large tree against raw ripgrep, the sandbox's cost per Bash call against a
plain `bash -c true`, three read-only Bash calls of one reply through the agent against the same
calls run one by one, and Read of a 100,000-line file against a bare Python read of the same lines.

    python benchmarks/bench_tools.py [files]      (default 50,000 generated files, kept in /var/tmp)
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from piton.builtin_tools.bash import Bash, BashInput  # noqa: E402
from piton.builtin_tools.grep import Grep  # noqa: E402
from piton.builtin_tools.read import Read  # noqa: E402
from piton.builtin_tools.ripgrep import rg_path  # noqa: E402
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


def grep_rows(files: int) -> list[tuple[str, float, float]]:
    root = tree(files)
    ctx = ToolContext(cwd=root, session_id="bench", policy=SandboxPolicy.create("workspace-write", root))
    rg = [rg_path(), "--no-config", "--hidden", "--glob=!.git"]
    rows = []
    for label, tool_input, raw in (
        ("files_with_matches", {"pattern": "NEEDLE_TOKEN"}, ["-l", "NEEDLE_TOKEN", str(root)]),
        (
            "content, -n",
            {"pattern": "NEEDLE_TOKEN", "output_mode": "content"},
            ["-n", "NEEDLE_TOKEN", str(root)],
        ),
        ("count", {"pattern": "def function", "output_mode": "count"}, ["-c", "def function", str(root)]),
    ):
        ours = median_ms(functools.partial(tool_call, Grep(), ctx, **tool_input))
        base = median_ms(functools.partial(subprocess.run, [*rg, *raw], capture_output=True, check=True))
        rows.append((label, base, ours))
    return rows


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


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    print(f"Grep over {files:,} files (median of {REPEATS}, ms)\n")
    print(f"{'mode':<20} {'raw rg':>9} {'Grep tool':>10} {'ratio':>6}")
    for label, base, ours in grep_rows(files):
        print(f"{label:<20} {base:>9.1f} {ours:>10.1f} {ours / base:>6.2f}")
    print("\nOne shell command, start to finish (mean of 30 calls, ms)\n")
    rows = shell_rows()
    base = rows[0][1]
    print(f"{'runner':<30} {'ms/call':>8} {'overhead':>9}")
    for label, ms in rows:
        print(f"{label:<30} {ms:>8.1f} {ms - base:>+9.1f}")
    print("\nRead-only Bash calls of one reply, `sleep 1; echo n`, through the agent (median of 3, ms)\n")
    rows = concurrency_rows()
    base = rows[0][1]
    print(f"{'calls':<36} {'ms':>8} {'ratio':>6}")
    for label, ms in rows:
        print(f"{label:<36} {ms:>8.0f} {ms / base:>6.2f}")
    print(f"\nRead of a 100,000-line file (median of {REPEATS}, ms)\n")
    print(f"{'range':<22} {'bare Python':>12} {'Read tool':>10} {'ratio':>6}")
    for label, base, ours in read_rows():
        print(f"{label:<22} {base:>12.1f} {ours:>10.1f} {ours / base:>6.2f}")


if __name__ == "__main__":
    main()
