"""What one sandboxed command costs, against floors measured in the same run: a bare `bwrap … true`
with the hardened argv (DESIGN §6), Piton's `Bash true` through the real tool path (one event loop,
as the agent calls it), and a command that writes in trees of 50,000 and 200,000 files (its guard
looks for planted settings files). The four are measured in turns, round after round, so a busy
machine slows them alike; CPU is Piton's own plus its children's (bwrap, bash). Then where the rest
goes, each part alone: the argv, the cgroup, the seccomp filter, the settings index, the spawn.

    python benchmarks/bench_sandbox.py [rounds] [files ...]   (default 40 rounds; trees of 50,000 and
                                                               200,000 generated files, kept in /var/tmp)
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from piton.builtin_tools.bash import Bash  # noqa: E402
from piton.core.conversation.messages import ToolUseBlock  # noqa: E402
from piton.core.safety import guard  # noqa: E402
from piton.core.safety.policy import SandboxPolicy  # noqa: E402
from piton.core.safety.sandbox import limits, seccomp  # noqa: E402
from piton.core.safety.sandbox.bwrap import BwrapSandbox  # noqa: E402
from piton.core.safety.settings_index import SettingsIndex, settings_below  # noqa: E402
from piton.core.tools import ToolContext, ToolRegistry  # noqa: E402

Sample = tuple[float, float]  # wall, CPU (ms)
_MARKER = ".bench-sandbox-marker"  # what the writing command writes


def tree(files: int, per_folder: int = 100) -> Path:
    """A generated source tree, made once and reused (its name says its size; the same tree as
    bench_tools.py's)."""
    suffix = "" if per_folder == 100 else f"-by-{per_folder}"
    root = Path(tempfile.gettempdir().replace("/tmp", "/var/tmp")) / f"piton-bench-tree-{files}{suffix}"
    if (root / ".complete").exists():
        return root
    for i in range(files):
        folder = root / f"pkg{i // per_folder:04d}"
        if i % per_folder == 0:
            folder.mkdir(parents=True, exist_ok=True)
        needle = "NEEDLE_TOKEN" if i % 97 == 0 else "ordinary"
        body = "".join(
            f"def function_{i}_{n}(x):\n    return x + {n}  # {needle if n == 3 else 'filler'}\n"
            for n in range(8)
        )
        (folder / f"module_{i}.py").write_text(body)
    (root / ".complete").touch()
    return root


def _cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def sample(fn: Callable[[], Any]) -> Sample:
    cpu, wall = _cpu_s(), time.perf_counter()
    fn()
    return (time.perf_counter() - wall) * 1000, (_cpu_s() - cpu) * 1000


def bare_argv(bwrap: str, root: Path) -> list[str]:
    """DESIGN §6's argv, with /bin/true for the command: the floor any sandboxed command pays."""
    return [
        bwrap, "--die-with-parent", "--new-session", "--unshare-user", "--cap-drop", "ALL",
        "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        "--bind", str(root), str(root), "--clearenv", "--setenv", "PATH", os.environ.get("PATH", ""),
        "--setenv", "HOME", str(Path.home()), "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp",
        "--chdir", str(root), "--", "/bin/true",
    ]  # fmt: skip


class Agentlike:
    """Bash called the way the agent calls it: through the tool registry, on one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, root: Path) -> None:
        self.loop = loop
        self.ctx = ToolContext(
            cwd=root, session_id="bench", policy=SandboxPolicy.create("workspace-write", root)
        )
        self.registry = ToolRegistry([Bash()])

    def __call__(self, command: str) -> None:
        block = ToolUseBlock(id="bench", name="Bash", input={"command": command})
        result = self.loop.run_until_complete(self.registry.call(block, self.ctx))
        assert not result.is_error, result.content


def in_turns(variants: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[Sample, Sample]]:
    """Each variant once per round, in turn; the median wall and CPU of each, and the lower quartile
    of wall (the least disturbed by other work on the machine)."""
    for fn in variants.values():
        fn()  # warm: caches, the settings index's first walk, the sandbox's probe
    samples: dict[str, list[Sample]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            samples[name].append(sample(fn))
    out = {}
    for name, got in samples.items():
        walls, cpus = [w for w, _ in got], [c for _, c in got]
        out[name] = (
            (statistics.median(walls), statistics.median(cpus)),
            (statistics.quantiles(walls)[0], 0.0),
        )
    return out


def command_rows(rounds: int, sizes: list[int]) -> None:
    loop = asyncio.new_event_loop()
    roots = {files: tree(files) for files in sizes}
    small = roots[sizes[0]]
    bwrap = BwrapSandbox(SandboxPolicy.create("workspace-write", small)).executable
    bare = bare_argv(bwrap, small)
    looking = Agentlike(loop, small)
    variants: dict[str, Callable[[], Any]] = {
        "bare bwrap true (floor)": lambda: subprocess.run(bare, stdin=subprocess.DEVNULL, check=True),
        "Bash `true`": lambda: looking("true"),
    }
    for files, root in roots.items():
        variants[f"Bash `touch x`, {files:,} files"] = partial(Agentlike(loop, root), f"touch {_MARKER}")
    try:
        results = in_turns(variants, rounds)
    finally:
        for root in roots.values():  # the trees are shared with other benchmarks
            (root / _MARKER).unlink(missing_ok=True)
    (floor_wall, floor_cpu), (floor_q1, _) = results["bare bwrap true (floor)"]
    load = os.getloadavg()[0]  # wall time stretches with what else runs: CPU time does not
    print(f"Per command, {rounds} rounds in turns (ms; + is over the floor; load average {load:.1f})\n")
    print(
        f"{'command':<34} {'wall':>8} {'+wall':>8} {'wall q1':>8} {'+q1':>7} {'CPU':>7} {'+CPU':>7} {'x':>5}"
    )
    for name, ((wall, cpu), (q1, _)) in results.items():
        print(
            f"{name:<34} {wall:>8.2f} {wall - floor_wall:>+8.2f} {q1:>8.2f} {q1 - floor_q1:>+7.2f} "
            f"{cpu:>7.2f} {cpu - floor_cpu:>+7.2f} {wall / floor_wall:>5.2f}"
        )
    loop.close()


def cpu_ms(fn: Callable[[], Any], repeats: int = 50) -> float:
    fn()
    times = []
    for _ in range(repeats):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000


def _cgroup(chosen: limits.Limits) -> None:
    group = limits.command_group(chosen)
    if group is not None:
        group.remove()


def _walk(root: Path) -> None:
    """What every command that could write paid before the index: a walk of the whole tree."""
    SettingsIndex(root, watch=False).refresh()


def _by_ctime(root: Path) -> Callable[[], None]:
    """A check where no folder can be watched: one lstat per folder."""
    index = SettingsIndex(root, watch=False)
    index.refresh()
    return index.refresh


def _guarded(policy: SandboxPolicy) -> None:
    guard.restore(guard.snapshot(policy))


def part_rows(sizes: list[int]) -> None:
    """Each part of a command's cost alone (Piton's own CPU, ms)."""
    root = tree(sizes[0])
    policy = SandboxPolicy.create("workspace-write", root)
    writing, looking = BwrapSandbox(policy), BwrapSandbox(policy.read_only())
    rows = [
        ("argv, cgroup, filter (writes)", cpu_ms(lambda: writing.launch("true", root).close())),
        ("argv, cgroup, filter (looks)", cpu_ms(lambda: looking.launch("true", root).close())),
        ("cgroup made and removed", cpu_ms(partial(_cgroup, writing.limits))),
        ("seccomp filter to a memfd", cpu_ms(lambda: os.close(seccomp.program_fd() or os.open("/", 0)))),
        ("spawn /bin/true", cpu_ms(lambda: subprocess.run(["/bin/true"]))),
        (
            "spawn /bin/true, preexec_fn",
            cpu_ms(lambda: subprocess.run(["/bin/true"], preexec_fn=lambda: None)),
        ),
    ]
    for files in sizes:
        at = tree(files)
        rows.append((f"settings: a whole walk, {files:,}", cpu_ms(partial(_walk, at), 5)))
        rows.append((f"settings: check, nothing changed, {files:,}", cpu_ms(partial(settings_below, (at,)))))
        rows.append((f"settings: check by ctimes, {files:,}", cpu_ms(_by_ctime(at))))
        policy_at = SandboxPolicy.create("workspace-write", at)
        rows.append((f"guard snapshot+restore, {files:,}", cpu_ms(partial(_guarded, policy_at))))
    print("\nParts, each alone (Piton's CPU, median ms)\n")
    for name, ms in rows:
        print(f"{name:<40} {ms:>8.3f}")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    sizes = [int(a) for a in sys.argv[2:]] or [50_000, 200_000]
    command_rows(rounds, sizes)
    part_rows(sizes)


if __name__ == "__main__":
    main()
