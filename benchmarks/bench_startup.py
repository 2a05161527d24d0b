"""Start-up and exit wall time of `piton`, against floors measured in the same run.

1. `piton --version` and `piton --help` against `python -c pass`.
2. `piton -p hi` against the fake Messages API (a thread of this process): process start to the
   first API request, the result written on stdout to process exit, and the whole run, against
   `python -c pass` and `python -c "import httpx2, pydantic"` (the libraries a request cannot do
   without: the floor the issue's goal of 3x is measured against); and `piton -p hi` with no API
   key, which must answer at once.

    python benchmarks/bench_startup.py [runs]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from piton.testing.bytecode import compile_package  # noqa: E402
from piton.testing.script import Reply, reply  # noqa: E402
from tests.fakes.fake_api import FakeAnthropicAPI  # noqa: E402


def piton() -> str:
    """The piton of this interpreter's environment (`.venv/bin/python benchmarks/bench_startup.py`), so
    the baseline and piton start the same Python; another one on PATH only when there is none here."""
    beside = Path(sys.executable).with_name("piton")
    found = str(beside) if beside.is_file() else shutil.which("piton")
    if found is None:
        sys.exit(f"bench_startup: no piton beside {sys.executable} or on PATH; run it with .venv/bin/python")
    compile_package()  # a user's install is compiled; a checkout under PYTHONDONTWRITEBYTECODE is not
    return found


def timed(
    argv: list[str], runs: int, env: dict[str, str] | None = None, cwd: Path | None = None
) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            check=False,
            env=env,
            cwd=cwd,
        )
        times.append(time.perf_counter() - started)
    return times


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """A fresh HOME and state directory (no session piles up in the user's), no proxy for the fake."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / ".state"),
        XDG_CONFIG_HOME=str(home / ".config"),
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    env.update(extra)
    return env


class _Arrival:
    """A scripted reply that notes when its request arrived."""

    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.at = time.perf_counter()
        return reply("hello")


def print_run(fake: FakeAnthropicAPI, env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """(start to first request, result written to exit, whole run) of one `piton -p hi`, seconds."""
    arrival = _Arrival()
    fake.add(arrival)
    started = time.perf_counter()
    process = subprocess.Popen(
        [piton(), "-p", "hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    written = time.perf_counter()
    process.stdout.read()
    code = process.wait()
    ended = time.perf_counter()
    if code != 0 or line != b"hello\n" or arrival.at is None:
        raise RuntimeError(f"piton -p hi failed: exit {code}, stdout {line!r}")
    return arrival.at - started, ended - written, ended - started


def startup_table(runs: int) -> None:
    cases = [
        ("python -c pass (baseline)", [sys.executable, "-c", "pass"]),
        ("piton --version", [piton(), "--version"]),
        ("piton --help", [piton(), "--help"]),
        ("python -c 'import httpx2, pydantic'", [sys.executable, "-c", "import httpx2, pydantic"]),
    ]
    results = {name: timed(argv, runs) for name, argv in cases}
    base = statistics.median(results[cases[0][0]])
    print(f"Start-up wall time, {runs} runs each (ms)\n")
    print(f"{'command':<32} {'median':>8} {'min':>8} {'x baseline':>11}")
    for name, times in results.items():
        median = statistics.median(times)
        print(f"{name:<32} {median * 1e3:>8.1f} {min(times) * 1e3:>8.1f} {median / base:>11.2f}")


def print_table(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropicAPI() as fake:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        env = isolated_env(home, ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.base_url)
        print_run(fake, env, project)  # warm the file cache
        floors_pass: list[float] = []
        floors_sdk: list[float] = []
        first: list[float] = []
        exits: list[float] = []
        whole: list[float] = []
        missing: list[float] = []
        no_key = isolated_env(home)
        for _ in range(runs):  # interleaved, so a noisy moment hits every row alike
            floors_pass += timed([sys.executable, "-c", "pass"], 1)
            floors_sdk += timed([sys.executable, "-c", "import httpx2, pydantic"], 1)
            a, b, c = print_run(fake, env, project)
            first.append(a)
            exits.append(b)
            whole.append(c)
            missing += timed([piton(), "-p", "hi"], 1, env=no_key, cwd=project)
    p, s = statistics.median(floors_pass), statistics.median(floors_sdk)
    print(f"\n`piton -p hi` against the fake API, {runs} runs each (ms; medians)\n")
    print(f"{'measure':<44} {'median':>8} {'min':>8} {'x pass':>7} {'x httpx2':>9}")
    rows = [
        ("python -c pass (floor)", floors_pass),
        ("python -c 'import httpx2, pydantic' (floor)", floors_sdk),
        ("-p: process start -> first API request", first),
        ("-p: result written -> process exit", exits),
        ("-p: whole run", whole),
        ("-p with no API key: whole run", missing),
    ]
    for name, times in rows:
        median = statistics.median(times)
        print(
            f"{name:<44} {median * 1e3:>8.1f} {min(times) * 1e3:>8.1f} {median / p:>7.2f} {median / s:>9.2f}"
        )


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    timed([piton(), "--version"], 2)  # warm the file cache
    startup_table(runs)
    print_table(max(5, runs * 2 // 3))


if __name__ == "__main__":
    main()
