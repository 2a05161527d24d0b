"""What hooks and MCP servers cost the path a user runs, against the same path without them,
measured in the same run (interleaved, so a noisy moment hits every row alike).

1. `piton -p` against the fake Messages API, the model making 5 Read calls: without hooks
   (baseline), and with a PreToolUse and a PostToolUse command hook (`true`) on every call.
2. `piton -p hi` with one stdio MCP server configured (the test suite's fixture server on the
   official SDK): process start to the first API request, which waits for the server's tools,
   against the same run with no server.
3. The REPL's ready prompt with the same MCP server configured, against none: servers start in the
   background and must not delay it.

    .venv/bin/python benchmarks/bench_extensions.py [runs]
"""

from __future__ import annotations

import json
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

from benchmarks.bench_repl import time_to  # noqa: E402
from benchmarks.bench_startup import isolated_env, piton  # noqa: E402
from piton.testing.script import Reply, ToolCall, reply  # noqa: E402
from tests.fakes.fake_api import FakeAnthropicAPI  # noqa: E402

SERVER = str(ROOT / "tests" / "fixtures" / "mcp_server.py")
CALLS = 5


def run_once(fake: FakeAnthropicAPI, env: dict[str, str], cwd: Path, replies: list[Any]) -> float:
    fake.add(*replies)
    started = time.perf_counter()
    done = subprocess.run(
        [piton(), "-p", "go"], capture_output=True, stdin=subprocess.DEVNULL, env=env, cwd=cwd, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"piton -p failed: {done.stderr.decode()[-500:]}")
    return time.perf_counter() - started


def first_request(fake: FakeAnthropicAPI, env: dict[str, str], cwd: Path) -> float:
    arrived: list[float] = []

    def note(body: dict[str, Any]) -> Reply:
        arrived.append(time.perf_counter())
        return reply("hello")

    started = time.perf_counter()
    run_once(fake, env, cwd, [note])
    return arrived[0] - started


def table(title: str, rows: list[tuple[str, list[float]]]) -> None:
    base = statistics.median(rows[0][1])
    print(f"\n{title} (ms)\n")
    print(f"{'case':<52} {'median':>8} {'min':>8} {'x baseline':>11}")
    for name, times in rows:
        median = statistics.median(times)
        print(f"{name:<52} {median * 1e3:>8.1f} {min(times) * 1e3:>8.1f} {median / base:>11.2f}")


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    mcp = {"mcpServers": {"fixture": {"command": sys.executable, "args": [SERVER]}}}
    hook = [{"matcher": "", "hooks": [{"type": "command", "command": "true"}]}]
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropicAPI() as fake:
        root = Path(tmp)
        homes = {name: root / name for name in ("plain", "hooks", "mcp")}
        project = root / "project"
        (project / "a.txt").parent.mkdir(parents=True)
        (project / "a.txt").write_text("hello\n")
        write(homes["plain"] / ".piton" / "settings.json", {})
        write(
            homes["hooks"] / ".claude" / "settings.json", {"hooks": {"PreToolUse": hook, "PostToolUse": hook}}
        )
        write(homes["mcp"] / ".piton" / "mcp.json", mcp)
        envs = {
            name: {
                k: v
                for k, v in isolated_env(
                    home, ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.base_url
                ).items()
                if k not in ("IS_SANDBOX", "CLAUDE_CONFIG_DIR")  # the machine's own, not the path measured
            }
            for name, home in homes.items()
        }
        read = [reply(ToolCall("Read", {"file_path": str(project / "a.txt")})) for _ in range(CALLS)]

        def script() -> list[Any]:
            return [*read, reply("done")]

        cases: dict[str, Callable[[], float]] = {
            f"-p, {CALLS} Read calls, no hooks (baseline)": lambda: run_once(
                fake, envs["plain"], project, script()
            ),
            f"-p, {CALLS} Read calls, PreToolUse + PostToolUse hooks": lambda: run_once(
                fake, envs["hooks"], project, script()
            ),
            "-p hi: start -> first request, no MCP server (baseline)": lambda: first_request(
                fake, envs["plain"], project
            ),
            "-p hi: start -> first request, one stdio MCP server": lambda: first_request(
                fake, envs["mcp"], project
            ),
            "REPL: ready prompt, no MCP server (baseline)": lambda: time_to(
                [piton()], "❯ ", str(project), {**envs["plain"], "TERM": "xterm-256color"}
            ),
            "REPL: ready prompt, one stdio MCP server": lambda: time_to(
                [piton()], "❯ ", str(project), {**envs["mcp"], "TERM": "xterm-256color"}
            ),
        }
        for measure in cases.values():  # warm the file cache
            measure()
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(runs):
            for name, measure in cases.items():
                times[name].append(measure())
    names = list(times)
    table("Hooks: a whole -p run", [(n, times[n]) for n in names[:2]])
    per_call = (statistics.median(times[names[1]]) - statistics.median(times[names[0]])) / (2 * CALLS)
    print(f"\n  about {per_call * 1e3:.1f} ms per hook run ({2 * CALLS} hook runs per -p run)")
    table("MCP: -p time to the first request", [(n, times[n]) for n in names[2:4]])
    table("MCP: the REPL's ready prompt", [(n, times[n]) for n in names[4:6]])


if __name__ == "__main__":
    main()
