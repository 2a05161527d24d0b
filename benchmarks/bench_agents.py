"""What background agents cost the session that runs them: `piton -p` against the fake Messages API
(served from this process, so its CPU is not counted), a parent that starts N agents, each reading a
file and reporting.

Printed, from one run on this machine:

- the CPU and peak memory of the whole `piton` process with no agent, and with N agents in the
  background, then N in the foreground (one Task call each, waited for): the floor the background
  mode is compared with, since it does the same work;
- per agent: the CPU and memory N background agents add, divided by N;
- the parent's wait: from the reply that starts the agents to the parent's next request (the
  background mode's point: the parent goes on at once).

    python benchmarks/bench_agents.py [--agents 10] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from piton.testing.script import Reply, ToolCall, reply  # noqa: E402
from tests.fakes.fake_api import FakeAnthropicAPI  # noqa: E402

PITON = Path(sys.executable).with_name("piton")


class Script:
    """The parent starts `agents` agents (in the background or not) and answers once all reported."""

    def __init__(self, agents: int, background: bool) -> None:
        self.agents, self.background = agents, background
        self.parent_requests: list[float] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        first = json.dumps(body["messages"][0])
        if "AGENT-" in first:
            if len(body["messages"]) == 1:
                return reply(ToolCall("Read", {"file_path": "notes.txt"}))
            return reply("read it: 40 lines")
        self.parent_requests.append(time.monotonic())
        if len(body["messages"]) == 1:
            if not self.agents:
                return reply("nothing to do")
            return reply(*(self._task(i) for i in range(self.agents)))
        heard = json.dumps(body["messages"]).count("<task-id>")
        done = heard >= self.agents or not self.background
        return reply("all reported" if done else "waiting")

    def _task(self, i: int) -> ToolCall:
        given = {"description": f"read {i}", "prompt": f"AGENT-{i}: read notes.txt"}
        return ToolCall("Task", {**given, "run_in_background": self.background})


def measure(agents: int, background: bool, project: Path) -> tuple[float, float, float]:
    """CPU seconds and peak memory (MB) of one `piton -p` run, and the parent's wait (s)."""
    script = Script(agents, background)
    with FakeAnthropicAPI() as fake:
        fake.add(*[script] * (4 * agents + 8))
        env = {k: v for k, v in os.environ.items() if k != "IS_SANDBOX"}
        env.update(ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY="test-key", ENABLE_TOOL_SEARCH="false")
        child = subprocess.Popen(
            [str(PITON), "-p", "read it", "--allowedTools", "Read"],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, status, usage = os.wait4(child.pid, 0)  # this child's own CPU and peak memory
        child.returncode = os.waitstatus_to_exitcode(status)
        stderr = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        raise SystemExit(f"bench_agents: piton failed: {stderr.strip()}")
    cpu = usage.ru_utime + usage.ru_stime
    starts = script.parent_requests
    wait = starts[1] - starts[0] if len(starts) > 1 else 0.0
    return cpu, usage.ru_maxrss / 1024, wait


def main() -> None:
    parser = argparse.ArgumentParser(description="What background agents cost a session.")
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "notes.txt").write_text("a line of notes\n" * 40)
        os.environ["HOME"] = str(project / "home")
        results: dict[str, list[tuple[float, float, float]]] = {
            "none": [],
            "background": [],
            "foreground": [],
        }
        for _ in range(args.runs):  # interleaved, so a slow moment of the machine hits all three
            results["none"].append(measure(0, True, project))
            results["background"].append(measure(args.agents, True, project))
            results["foreground"].append(measure(args.agents, False, project))
    med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in results.items()}
    n = args.agents
    print(f"{n} agents, median of {args.runs} runs (the whole piton process: its CPU, its peak memory)")
    print(f"{'':24}{'CPU s':>8}{'peak MB':>9}{'parent waits s':>16}")
    for name, (cpu, rss, wait) in med.items():
        print(f"{name:24}{cpu:8.2f}{rss:9.0f}{wait:16.3f}")
    per_cpu = (med["background"][0] - med["none"][0]) / n
    per_mb = (med["background"][1] - med["none"][1]) / n
    print(f"per background agent: {per_cpu * 1000:.0f} ms CPU, {per_mb:.1f} MB")
    ratio = med["background"][0] / med["foreground"][0]
    print(f"background / foreground CPU (same work): {ratio:.2f}x")
    print(
        f"parent's wait, background / foreground: {med['background'][2]:.3f} s / {med['foreground'][2]:.3f} s"
    )


if __name__ == "__main__":
    main()
