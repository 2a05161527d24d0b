"""Start-up wall time of `piton --version` and `piton --help`, against `python -c pass` in the same run.

`--version` must not import the SDK (goal: under 150 ms on a 2-core machine).

    python benchmarks/bench_startup.py [runs]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def piton() -> str:
    found = shutil.which("piton") or str(Path(sys.executable).with_name("piton"))
    return found


def timed(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True
        )
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    cases = [
        ("python -c pass (baseline)", [sys.executable, "-c", "pass"]),
        ("piton --version", [piton(), "--version"]),
        ("piton --help", [piton(), "--help"]),
        ("python -c 'import anthropic'", [sys.executable, "-c", "import anthropic"]),
    ]
    timed([piton(), "--version"], 2)  # warm the file cache
    results = {name: timed(argv, runs) for name, argv in cases}
    base = statistics.median(results[cases[0][0]])
    print(f"Start-up wall time, {runs} runs each (ms)\n")
    print(f"{'command':<32} {'median':>8} {'min':>8} {'x baseline':>11}")
    for name, times in results.items():
        median = statistics.median(times)
        print(f"{name:<32} {median * 1e3:>8.1f} {min(times) * 1e3:>8.1f} {median / base:>11.2f}")


if __name__ == "__main__":
    main()
