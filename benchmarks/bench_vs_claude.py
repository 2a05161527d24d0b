"""Piton side by side with Claude Code on this machine, against the same fake Messages API, in one
run: CPU (user+sys of the process and all it starts, `ChildCpu`: the fair figure when cores are
shared) and wall, medians of runs interleaved so that a noisy moment hits both alike.

1. `-p hello`, the whole run (target: Piton ≤ 0.6× Claude Code's CPU), against `bare_client.py`:
   asyncio, httpx2 and a pydantic model streaming one reply, the least a client on Piton's libraries
   spends.
2. Process start → first API request, against `python -c "import httpx2, pydantic"`, the least a
   client that sends with httpx2 and validates with pydantic loads (target ≤ 3× it).
3. `--version` (target: Piton ≤ Claude Code).   4. The first request's size and tools (target ≤ 14 KB).
5. The REPL in a pseudo-terminal: launch → the prompt line (where keys can be typed; Piton shows a
   dim `…` until its session is ready, then `❯`); Enter on the first message → its request at the
   API → the answer on screen, Enter pressed once the prompt has settled and as soon as `❯` shows
   (target ≤ 100 ms), and as soon as the prompt line is drawn (on Piton's `…`, where the message
   waits for the session: launch → answer is the figure to compare).
6. A tool loop of LOOP_TURNS turns (`Bash true` and `Read`, alternating): time per turn.

Claude Code is npm's @anthropic-ai/claude-code: `--install` puts it in ~/.cache/piton-bench/claude-code;
otherwise a `claude` on PATH or in that cache is used, and with none only Piton's rows print.

    .venv/bin/python benchmarks/bench_vs_claude.py [--install] [--runs N] [--piton PATH]

`--piton` names the piton to measure, such as a user's install (`python3 install.py`); by default
the one beside this interpreter.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from subprocess import DEVNULL, PIPE, Popen
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import claude_code  # noqa: E402
from benchmarks.bench_startup import isolated_env, piton  # noqa: E402
from benchmarks.claude_code import ChildCpu, Terminal, cpu_so_far  # noqa: E402
from piton.testing.script import Reply, ToolCall, reply  # noqa: E402
from tests.fakes.fake_api import FakeAnthropicAPI  # noqa: E402

API_KEY = "bench-key"
ANSWER = "wombat42 is the answer."  # one word to look for: Claude Code moves the cursor between words
LOOP_PROMPT = "run the tool loop"
LOOP_TURNS = 26
LOOP_ARGS = ["-p", LOOP_PROMPT, "--allowedTools", "Bash(true)", "Read"]
FLOOR = [sys.executable, "-c", "import httpx2, pydantic"]
BARE = [sys.executable, str(ROOT / "benchmarks" / "bare_client.py"), "hello"]
NAMES = ("Piton", "Claude Code")
T = TypeVar("T")
Both = tuple[float | None, float | None]  # Piton's, Claude Code's (None without it)
PROMPT, PITON_READY = "❯".encode(), "✻ Piton".encode()  # the prompt; Piton's banner once it is ready
PITON_DRAWN = "… ".encode()  # the mark Piton's prompt shows while the session starts (keys are taken)


@dataclass
class Arrival:
    at: float  # perf_counter
    cpu: float | None  # the client's CPU seconds at that moment
    body: dict[str, Any]
    main: bool  # a turn of the conversation (with tools), not a side request such as a session title


@dataclass
class Responder:
    """Answers every request from its body alone, so entries left in the fake's script serve later
    runs alike, and notes each arrival with the CPU the client (`pid`) had used by then."""

    notes: Path
    pid: int = 0
    arrivals: list[Arrival] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> Reply:
        at, cpu = time.perf_counter(), cpu_so_far(self.pid)
        if (body.get("output_config") or {}).get("format"):  # Claude Code's session title
            self.arrivals.append(Arrival(at, cpu, body, main=False))
            return reply('{"title": "Greeting"}')
        self.arrivals.append(Arrival(at, cpu, body, main=bool(body.get("tools"))))
        if LOOP_PROMPT not in json.dumps(body["messages"][0]):
            return reply(ANSWER)
        done = sum('"tool_result"' in json.dumps(m) for m in body["messages"] if m["role"] == "user")
        if done == LOOP_TURNS - 1:
            return reply("Done.")
        if done % 2:
            return reply(ToolCall("Read", {"file_path": str(self.notes)}))
        return reply(ToolCall("Bash", {"command": "true", "description": "Does nothing"}))

    def since(self, started: float) -> list[Arrival]:
        return [a for a in self.arrivals if a.main and a.at >= started]


@dataclass
class Client:
    name: str
    argv: list[str]
    env: dict[str, str]
    ready: bytes  # on screen once the REPL has finished starting
    drawn: bytes  # the first prompt line on screen, where keys can be typed


@dataclass
class Bench:
    fake: FakeAnthropicAPI
    responder: Responder
    project: Path
    clients: list[Client]
    runs: int
    meter: ChildCpu


@dataclass
class Run:
    cpu: float
    wall: float
    arrivals: list[Arrival]
    started: float


def run(bench: Bench, argv: list[str], env: dict[str, str] | None = None, expect: str = "") -> Run:
    """One process to its end (runs go one at a time, so the meter counts it alone)."""
    bench.fake.add(*[bench.responder] * (LOOP_TURNS + 4))
    before, started = bench.meter.seconds(), time.perf_counter()
    process = Popen(
        bench.meter.wrap(argv), env=env, cwd=bench.project, stdin=DEVNULL, stdout=PIPE, stderr=PIPE
    )
    bench.responder.pid = process.pid
    out, err = process.communicate(timeout=300)
    wall, cpu = time.perf_counter() - started, bench.meter.seconds() - before
    if process.returncode != 0 or expect not in out.decode():
        raise RuntimeError(f"{argv[0]} failed: exit {process.returncode}, {out[-300:]!r} {err[-600:]!r}")
    return Run(cpu, wall, bench.responder.since(started), started)


def interleaved(
    bench: Bench,
    args: list[str],
    expect: str = "",
    floor: list[str] | None = None,
    runs: int = 0,
    bare: list[str] | None = None,
) -> dict[str, list[Run]]:
    """Every client run with `args` (and `floor` and `bare`, as they are) in turns, after one
    warm-up run each."""
    cases: list[tuple[str, list[str], dict[str, str] | None]] = [("floor", floor, None)] if floor else []
    if bare:
        cases.append(("bare", bare, bench.clients[0].env))
    cases += [(c.name, [*c.argv, *args], c.env) for c in bench.clients]
    results: dict[str, list[Run]] = {name: [] for name, _, _ in cases}
    for turn in range(1 + (runs or bench.runs)):
        for name, argv, env in cases:
            done = run(bench, argv, env, expect if name != "floor" else "")
            if turn:  # the first turn warms the file cache
                results[name].append(done)
    return results


@dataclass
class Row:
    what: str
    piton: float | None
    claude: float | None = None
    floor: float | None = None
    limit: tuple[str, float] | None = None  # ("cc" | "floor", the largest ratio), or ("most", in `unit`)
    unit: str = "ms"


def print_table(title: str, rows: list[Row]) -> None:
    print(f"\n{title}\n\n{'measure':<46} {'Piton':>8} {'Claude':>8} {'P/C':>6} {'x floor':>8}  target")
    for r in rows:
        ratio = r.piton / r.claude if r.piton is not None and r.claude else None
        by_floor = r.piton / r.floor if r.piton is not None and r.floor else None
        target = ""
        if r.limit is not None:
            kind, most = r.limit
            got = {"cc": ratio, "floor": by_floor, "most": r.piton}[kind]
            of = {"cc": "x Claude", "floor": "x floor", "most": " " + r.unit}[kind]
            target = f"≤ {most:g}{of}"
            target += ": n/a" if got is None else (": met" if got <= most else ": MISSED")
        cells = " ".join(
            _cell(*c) for c in ((r.piton, 8, 1), (r.claude, 8, 1), (ratio, 6, 2), (by_floor, 8, 2))
        )
        print(f"{r.what + f' ({r.unit})':<46} {cells}  {target}".rstrip())


def _cell(value: float | None, width: int, digits: int) -> str:
    return " " * width if value is None else f"{value:>{width}.{digits}f}"


def pair(results: dict[str, list[T]], fn: Callable[[T], float | None]) -> Both:
    """The median of `fn` (seconds, shown in ms) over Piton's runs and over Claude Code's."""

    def of(name: str) -> float | None:
        values = [v for r in results.get(name, []) if (v := fn(r)) is not None]
        return median(values) * 1000 if values else None

    return of(NAMES[0]), of(NAMES[1])


def print_runs(bench: Bench) -> dict[str, list[Run]]:
    results = interleaved(bench, ["-p", "hello"], "wombat42", FLOOR, bare=BARE)
    floor = {k: median([getattr(r, k) for r in results["floor"]]) * 1000 for k in ("wall", "cpu")}
    bare = median([r.cpu for r in results["bare"]]) * 1000
    first_wall = pair(results, lambda r: r.arrivals[0].at - r.started)
    first_cpu = pair(results, lambda r: r.arrivals[0].cpu)
    print_table(
        f"1. `-p hello`, the whole run (median of {bench.runs} interleaved runs)",
        [
            Row("CPU, user+sys", *pair(results, lambda r: r.cpu), floor=bare, limit=("cc", 0.6)),
            Row("wall", *pair(results, lambda r: r.wall)),
            Row("floor: bare_client.py hello, CPU", bare, pair(results, lambda r: r.cpu)[1]),
        ],
    )
    print_table(
        "2. Process start → first API request (`-p hello`, the same runs)",
        [
            Row("wall", *first_wall, floor=floor["wall"], limit=("floor", 3.0)),
            Row("CPU, user+sys, at its arrival", *first_cpu, floor=floor["cpu"], limit=("floor", 3.0)),
            Row("floor: import httpx2, pydantic: wall", floor["wall"]),
            Row("floor: import httpx2, pydantic: CPU", floor["cpu"]),
        ],
    )
    return results


def print_version(bench: Bench) -> None:
    beside = Path(bench.clients[0].argv[0]).with_name("python")  # the measured piton's own Python
    python = str(beside) if beside.exists() else sys.executable
    results = interleaved(bench, ["--version"], floor=[python, "-c", "pass"])
    floor = median([r.cpu for r in results["floor"]]) * 1000
    print_table(
        f"3. `--version` (median of {bench.runs} interleaved runs)",
        [
            Row("CPU, user+sys", *pair(results, lambda r: r.cpu), floor=floor, limit=("cc", 1.0)),
            Row("wall", *pair(results, lambda r: r.wall)),
            Row("floor: python -c pass, CPU", floor),
        ],
    )


def print_request(bench: Bench, results: dict[str, list[Run]]) -> None:
    first = {name: runs[-1].arrivals[0].body for name, runs in results.items() if name in NAMES}

    def both(fn: Callable[[dict[str, Any]], float]) -> Both:
        got = [fn(first[n]) if n in first else None for n in NAMES]
        return got[0], got[1]

    def kb(part: str) -> Callable[[dict[str, Any]], float]:
        return lambda body: len(json.dumps(body.get(part, ""), separators=(",", ":"))) / 1024

    def count(deferred: bool) -> Callable[[dict[str, Any]], float]:
        return lambda body: sum(bool(t.get("defer_loading")) >= deferred for t in body.get("tools", []))

    def sent(body: dict[str, Any]) -> float:  # content-length, found by the body the responder was given
        return int(next(r for r in bench.fake.requests if r.body is body).headers["content-length"]) / 1024

    print_table(
        "4. The first request of `-p hello`",
        [
            Row("size as sent", *both(sent), limit=("most", 14), unit="KB"),
            *(
                Row(f"  {part} (compact JSON)", *both(kb(part)), unit="KB")
                for part in ("tools", "system", "messages")
            ),
            Row("tools sent", *both(count(False)), unit="count"),
            Row("  of which deferred (defer_loading)", *both(count(True)), unit="count"),
        ],
    )
    print("models: " + ", ".join(f"{n} {b.get('model')}" for n, b in first.items()))


@dataclass
class Screen:
    """One REPL run, seconds: launch → prompt drawn, Enter → request at the API → answer on screen."""

    drawn: float
    prompt: float
    enter_request: float
    request_answer: float
    enter_answer: float
    launch_answer: float
    request_cpu: float | None  # the client's CPU from launch to the request's arrival


WHEN = ("settled", "at once", "on the line")  # when `hello` is typed: see `repl_once`


def repl_once(bench: Bench, client: Client, when: str) -> Screen:
    """Launch, type `hello` (once the prompt has settled, as soon as `❯` shows, or as soon as the
    prompt line is drawn: for Piton, on its `…` while the session starts), press Enter when it
    echoes, and wait for the answer on screen."""
    bench.fake.add(*[bench.responder] * 4)
    term = Terminal(client.argv, bench.project, client.env)
    bench.responder.pid = term.child.pid or 0
    try:
        drawn = term.wait_for(client.drawn)
        if when != "on the line":
            term.wait_for(PROMPT)
        if when == "settled":
            term.wait_for(client.ready)
            term.wait_quiet(1.0)
        mark = term.mark()
        term.type(b"hello")
        term.wait_for(b"hello", mark)
        mark = term.mark()
        enter = term.type(b"\r")
        answer = term.wait_for(b"wombat42", mark)
        request = bench.responder.since(enter)[0]
        prompt = term.wait_for(PROMPT)  # shown by now, whenever it came
    finally:
        term.close()
    start, at = term.started, request.at
    return Screen(
        drawn - start, prompt - start, at - enter, answer - at, answer - enter, answer - start, request.cpu
    )


def print_repl(bench: Bench, runs: int) -> None:
    screens: dict[str, dict[str, list[Screen]]] = {when: {} for when in WHEN}
    for c in bench.clients:  # warm the file cache
        repl_once(bench, c, "at once")
    for _ in range(runs):
        for c in bench.clients:
            for when in WHEN:
                screens[when].setdefault(c.name, []).append(repl_once(bench, c, when))

    launches = {n: screens["settled"].get(n, []) + screens["at once"].get(n, []) for n in NAMES}

    def row(what: str, fn: Callable[[Screen], float | None], **kw: Any) -> Row:
        return Row(what, *pair(screens[what.split(":")[0]], fn), **kw)  # "settled: …": those runs

    print_table(
        f"5. REPL in a pseudo-terminal, first message (median of {runs} interleaved runs)",
        [
            Row("launch → prompt line drawn, keys taken", *pair(launches, lambda s: s.drawn)),
            Row("launch → prompt mark ❯ drawn", *pair(launches, lambda s: s.prompt)),
            row("settled: Enter → request at the API", lambda s: s.enter_request, limit=("most", 100)),
            row("settled: request → answer on screen", lambda s: s.request_answer),
            row("settled: Enter → answer on screen", lambda s: s.enter_answer),
            row("at once: Enter → request at the API", lambda s: s.enter_request, limit=("most", 100)),
            row("at once: request → answer on screen", lambda s: s.request_answer),
            row("at once: Enter → answer on screen", lambda s: s.enter_answer),
            row("at once: launch → answer on screen", lambda s: s.launch_answer),
            row("at once: CPU, launch → request", lambda s: s.request_cpu),
            # keys typed ahead on Piton's `…` wait for the session: what counts is when the request goes
            row("on the line: Enter → request at the API", lambda s: s.enter_request),
            row("on the line: launch → answer on screen", lambda s: s.launch_answer),
        ],
    )


def print_loop(bench: Bench, hello: dict[str, list[Run]], runs: int) -> None:
    """`-p` through LOOP_TURNS turns; a turn's wall is the gap between two requests' arrivals (the
    fake answers in about a millisecond), its CPU the loop's CPU beyond `-p hello`'s, per extra turn."""
    results = interleaved(bench, LOOP_ARGS, "Done.", runs=runs)
    for name, done in results.items():
        last = done[-1].arrivals[-1].body["messages"]
        failed = json.dumps(last).count('"is_error": true')
        if len(done[-1].arrivals) != LOOP_TURNS or failed:
            print(f"note: {name}'s loop made {len(done[-1].arrivals)} requests, {failed} tool results failed")

    def gaps(r: Run) -> list[float]:
        return [b.at - a.at for a, b in zip(r.arrivals, r.arrivals[1:], strict=False)]

    def per_turn(name: str) -> float | None:
        if name not in results:
            return None
        extra = median([r.cpu for r in results[name]]) - median([r.cpu for r in hello[name]])
        return extra / (LOOP_TURNS - 1) * 1000

    print_table(
        f"6. A tool loop of {LOOP_TURNS} turns, `-p` (Bash true / Read; median of {runs} interleaved runs)",
        [
            Row("per turn: wall between requests", *pair(results, lambda r: median(gaps(r)))),
            Row("per turn: CPU over `-p hello`'s / 25", per_turn(NAMES[0]), per_turn(NAMES[1])),
            Row("whole loop: CPU, user+sys", *pair(results, lambda r: r.cpu)),
            Row("whole loop: wall", *pair(results, lambda r: r.wall)),
        ],
    )
    if not bench.meter.counts_all:
        print("(a sandboxed command's own CPU is not in Piton's: bubblewrap's init does not wait for it)")


def clients(home: Path, project: Path, claude: str | None, base_url: str, own: str) -> list[Client]:
    """Piton (`own`), and Claude Code when there is one, each with a home of its own."""
    env = isolated_env(home, ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=base_url, TERM="xterm-256color")
    # a user's path: no IS_SANDBOX, and nothing of an outer Claude Code session (CLAUDECODE, ...)
    base = {k: v for k, v in env.items() if k != "IS_SANDBOX" and not k.startswith("CLAUDE")}
    (home / "piton").mkdir()
    found = [Client(NAMES[0], [own], {**base, "HOME": str(home / "piton")}, PITON_READY, PITON_DRAWN)]
    if claude is not None:
        env = claude_code.claude_env(base, home / "claude", project, API_KEY)
        found.append(Client(NAMES[1], [claude], env, PROMPT, PROMPT))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description="Piton side by side with Claude Code, against the fake API.")
    parser.add_argument("--install", action="store_true", help="npm install Claude Code into the cache first")
    parser.add_argument("--runs", type=int, default=7, help="runs of each short measure (default 7)")
    parser.add_argument("--piton", help="the piton to measure (default: the one beside this Python)")
    args = parser.parse_args()
    own = args.piton or piton()
    if args.install:
        claude_code.install()
    claude = claude_code.find(prefer_cache=args.install)
    print(f"Piton: {own}")
    if claude is None:
        print("skipped: Claude Code (no `claude` on PATH or in the cache; --install puts it there)")
    else:
        print(f"Claude Code: {claude_code.version(claude)} ({claude})")
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    meter = ChildCpu()
    print(f"CPU counted by {'a cgroup (every descendant)' if meter.counts_all else 'getrusage of children'}")
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropicAPI(API_KEY) as fake, contextlib.closing(meter):
        home, project = Path(tmp), Path(tmp) / "project"
        project.mkdir()
        (project / "notes.txt").write_text("one line\n")
        found = clients(home, project, claude, fake.base_url, own)
        bench = Bench(fake, Responder(project / "notes.txt"), project, found, args.runs, meter)
        hello = print_runs(bench)
        print_version(bench)
        print_request(bench, hello)
        print_repl(bench, max(3, args.runs // 2))
        print_loop(bench, hello, max(3, args.runs // 2))
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
