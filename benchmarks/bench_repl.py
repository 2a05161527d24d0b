"""The interactive terminal: time to a ready prompt, rendering cost of long streamed answers, and the
CPU and memory of a REPL left idle after it answered, each against a baseline measured in the same run.

    .venv/bin/python benchmarks/bench_repl.py
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.markdown import Markdown  # noqa: E402

from piton.cli.render import Renderer  # noqa: E402
from piton.core.conversation.events import MessageDone, TextDelta  # noqa: E402
from piton.core.conversation.messages import Message  # noqa: E402
from piton.core.conversation.usage import Usage  # noqa: E402

RUNS = 10
PITON = str(Path(sys.executable).with_name("piton"))


def _env(state: str) -> dict[str, str]:
    return {
        **os.environ,
        "ANTHROPIC_API_KEY": "unused",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "XDG_STATE_HOME": state,
        "TERM": "xterm-256color",
    }


def time_to(argv: list[str], until: str | type, cwd: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    child = pexpect.spawn(
        argv[0], argv[1:], cwd=cwd, env=env, encoding="utf-8", timeout=30, dimensions=(30, 100)
    )
    child.expect(until if not isinstance(until, str) else [until])
    elapsed = time.perf_counter() - started
    if child.isalive():
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    child.close()
    return elapsed


def startup() -> list[tuple[str, float]]:
    project, state = tempfile.mkdtemp(), tempfile.mkdtemp()
    env = _env(state)
    cases = [
        ("python -c pass (baseline)", [sys.executable, "-c", "pass"], pexpect.EOF),
        ("python: import prompt_toolkit", [sys.executable, "-c", "import prompt_toolkit"], pexpect.EOF),
        ("piton: ready prompt", [PITON], "❯ "),
    ]
    time_to([PITON], "❯ ", project, env)  # warm the file cache
    return [
        (label, statistics.median(time_to(argv, until, project, env) for _ in range(RUNS)))  # type: ignore[arg-type]
        for label, argv, until in cases
    ]


def answer(size: int) -> str:
    """Markdown like a long answer: prose, lists and code, about `size` characters."""
    unit = (
        "## A section\n\nSome prose with **bold**, `code` and a [link](https://example.com) that goes on "
        "for a while to make a realistic paragraph of an answer.\n\n"
        "- first point\n- second point with `inline code`\n\n"
        "```python\ndef example(x):\n    return x * 2\n```\n\n"
    )
    return (unit * (size // len(unit) + 1))[:size]


def code_answer(lines: int) -> str:
    """One long Python block, printed in batches as it streams, with a docstring every few lines."""
    body = "".join(
        f'def f{i}(x):\n    """Doc {i}."""\n    return x * {i}  # note\n\n' for i in range(lines // 4)
    )
    return f"Here it is:\n\n```python\n{body}```\n"


def _console() -> Console:
    """A terminal-like console that writes nowhere."""
    return Console(
        file=io.StringIO(),
        width=100,
        height=40,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
    )


def render_cpu(text: str) -> float:
    """CPU seconds to stream `text` in 20-character deltas, with the live area drawn ~12 times a second
    at a typical 600 deltas a second (one draw per 50 deltas)."""
    console = _console()
    renderer = Renderer(console)
    renderer.begin()
    started = time.process_time()
    for n, i in enumerate(range(0, len(text), 20)):
        renderer.handle(TextDelta(text[i : i + 20]))
        if n % 50 == 0:
            renderer.live()
    renderer.handle(MessageDone(Message(role="assistant", content=[]), Usage(), "end_turn", "m", "id"))
    return time.process_time() - started


def render_once(text: str) -> float:
    """CPU seconds to render the whole answer once, at the end: the least any display could do."""
    console = _console()
    started = time.process_time()
    console.print(Markdown(text))
    return time.process_time() - started


IDLE_S = 10.0
_BASELINE_PROMPT = (
    "import asyncio\n"
    "from prompt_toolkit import PromptSession\n"
    "async def main():\n"
    "    await PromptSession().prompt_async('ready> ')\n"
    "asyncio.run(main())\n"
)


def _cpu_and_rss(pid: int) -> tuple[float, float]:
    """CPU seconds of all of a process's threads (from schedstat: nanoseconds, where /proc/pid/stat
    counts 10 ms ticks) and its resident MB."""
    cpu = 0.0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as f:
            cpu += int(f.read().split()[0]) / 1e9
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
    return cpu, rss / 1024


def idle_after(child: pexpect.spawn[str]) -> tuple[float, float]:
    """CPU milliseconds over IDLE_S of idleness, and resident MB at the end."""
    assert child.pid is not None
    before, _ = _cpu_and_rss(child.pid)
    time.sleep(IDLE_S)
    after, rss = _cpu_and_rss(child.pid)
    return (after - before) * 1000, rss


def baseline_idle() -> tuple[float, float]:
    """A bare prompt_toolkit prompt, waiting: the floor for an idle terminal program."""
    env = {**os.environ, "TERM": "xterm-256color"}
    child = pexpect.spawn(
        sys.executable, ["-c", _BASELINE_PROMPT], env=env, encoding="utf-8", timeout=30, dimensions=(30, 100)
    )
    child.expect_exact("ready>")
    time.sleep(1.0)  # as for the REPL: the first redraws settle
    measured = idle_after(child)
    child.sendcontrol("c")
    child.close(force=True)
    return measured


def repl_idle_after_an_answer() -> tuple[float, float]:
    """The REPL, asked one question over the real SDK against the fake API, then left idle."""
    sys.path.insert(0, str(ROOT))
    from piton.testing.script import reply
    from tests.fakes.fake_api import FakeAnthropicAPI

    project, state = tempfile.mkdtemp(), tempfile.mkdtemp()
    with FakeAnthropicAPI("unused") as fake:
        fake.add(reply("The answer is **42**, and here is a list:\n\n- one\n- two\n"))
        env = {**_env(state), "ANTHROPIC_BASE_URL": fake.base_url}
        child = pexpect.spawn(
            PITON, [], cwd=project, env=env, encoding="utf-8", timeout=30, dimensions=(30, 100)
        )
        child.expect_exact("❯ ")
        child.send("what is the answer?\r")
        child.expect("42")
        child.expect_exact("❯ ")
        time.sleep(1.0)  # the last redraws settle
        measured = idle_after(child)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    return measured


def main() -> None:
    print(f"Time to a ready prompt (median of {RUNS}, ms)\n")
    rows = startup()
    base = rows[0][1]
    print(f"{'command':<32} {'ms':>8} {'x baseline':>11}")
    for label, seconds in rows:
        print(f"{label:<32} {seconds * 1000:>8.0f} {seconds / base:>11.2f}")

    print("\nRendering a streamed answer in 20-character deltas (CPU seconds, median of 3)\n")
    print(f"{'answer':<10} {'render once':>12} {'streamed':>9} {'ratio':>6}")
    streamed = {}
    for size in (50_000, 200_000):
        text = answer(size)
        once = statistics.median(render_once(text) for _ in range(3))
        streamed[size] = statistics.median(render_cpu(text) for _ in range(3))
        print(f"{size // 1000:>4} KB    {once:>12.2f} {streamed[size]:>9.2f} {streamed[size] / once:>6.2f}")
    print(f"\n4x the text costs {streamed[200_000] / streamed[50_000]:.2f}x the time")
    text = code_answer(1600)
    once = statistics.median(render_once(text) for _ in range(3))
    code_streamed = statistics.median(render_cpu(text) for _ in range(3))
    label = f"{len(text) // 1000} KB, one 1,600-line code block"
    print(f"{label}: render once {once:.2f}, streamed {code_streamed:.2f}, ratio {code_streamed / once:.2f}")

    print(f"\nIdle for {IDLE_S:.0f} s: CPU and memory (after the answer, for the REPL)\n")
    base_cpu, base_rss = baseline_idle()
    repl_cpu, repl_rss = repl_idle_after_an_answer()
    print(f"{'process':<46} {'CPU ms':>7} {'RSS MB':>7} {'x RSS':>6}")
    print(f"{'python + prompt_toolkit prompt (baseline)':<46} {base_cpu:>7.2f} {base_rss:>7.1f} {1:>6.2f}")
    label = "piton REPL after one answer (SDK loaded)"
    print(f"{label:<46} {repl_cpu:>7.2f} {repl_rss:>7.1f} {repl_rss / base_rss:>6.2f}")


if __name__ == "__main__":
    main()
