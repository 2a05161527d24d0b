"""Glob, Grep and Edit at scale, in CPU time against the programs they wrap, measured in the same run.

Each tool is called as the agent calls it (through the registry, with the workspace-write policy, so
ripgrep runs inside the read-only sandbox, and with checkpoints recording the turn's files); each
floor is the bare program doing the same job, its output written to a file as a terminal user's
redirect would. CPU time counts this process and everything it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from piton.builtin_tools.edit import Edit
from piton.builtin_tools.glob import Glob
from piton.builtin_tools.grep import Grep
from piton.builtin_tools.read import Read
from piton.builtin_tools.ripgrep import rg_path
from piton.core.checkpoints import Checkpoints
from piton.core.conversation.messages import ToolUseBlock
from piton.core.safety.policy import SandboxPolicy
from piton.core.tools import ToolContext, ToolRegistry, ToolResult

REPEATS = 5
_CPUACCT = Path("/sys/fs/cgroup/cpuacct")

# (what, floor's name, floor CPU ms, tool CPU ms, tool wall ms)
Row = tuple[str, str, float, float, float]


class CpuMeter:
    """CPU seconds used so far by this process and all it started. A sandboxed command's CPU is not
    in getrusage's children (bubblewrap's init does not wait for the command it starts), so where a
    cgroup v1 cpuacct hierarchy lets us (as root) the process moves into a cpuacct group of its own,
    which counts every descendant; elsewhere getrusage, which misses what ran inside bwrap."""

    def __init__(self) -> None:
        self.group: Path | None = None
        self.home = _CPUACCT
        with contextlib.suppress(OSError):
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                _, controllers, where = line.split(":", 2)
                if "cpuacct" in controllers.split(","):
                    self.home = _CPUACCT / where.lstrip("/")
            group = self.home / f"piton-bench-{os.getpid()}"
            group.mkdir()
            self.group = group
            (group / "cgroup.procs").write_text(str(os.getpid()))

    @property
    def counts_sandbox(self) -> bool:
        return self.group is not None and (self.group / "cpuacct.usage").exists()

    def seconds(self) -> float:
        if self.counts_sandbox:
            assert self.group is not None
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime

    def close(self) -> None:
        if self.group is not None:
            with contextlib.suppress(OSError):
                (self.home / "cgroup.procs").write_text(str(os.getpid()))
                self.group.rmdir()
            self.group = None


def measure(meter: CpuMeter, fn: Callable[[], Any], repeats: int = REPEATS) -> tuple[float, float]:
    """Median CPU ms and median wall ms of `fn`, after one warm-up call."""
    fn()
    cpu, wall = [], []
    for _ in range(repeats):
        started_cpu, started = meter.seconds(), time.perf_counter()
        fn()
        cpu.append(meter.seconds() - started_cpu)
        wall.append(time.perf_counter() - started)
    return statistics.median(cpu) * 1000, statistics.median(wall) * 1000


def tool_call(tool: Any, ctx: ToolContext, **tool_input: Any) -> ToolResult:
    block = ToolUseBlock(id="bench", name=tool.name, input=tool_input)
    return asyncio.run(ToolRegistry([tool]).call(block, ctx))


def ok(tool: Any, ctx: ToolContext, **tool_input: Any) -> Callable[[], None]:
    def call() -> None:
        result = tool_call(tool, ctx, **tool_input)
        assert not result.is_error, result.content

    return call


def program(argv: list[str], cwd: Path, codes: tuple[int, ...] = (0,)) -> Callable[[], None]:
    """The bare program, stdout to a file: what the floor costs without anyone reading a pipe."""

    def run() -> None:
        with tempfile.TemporaryFile() as out:
            done = subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL, check=False)
        assert done.returncode in codes, (argv, done.returncode)

    return run


@contextlib.contextmanager
def session_context(work: Path) -> Iterator[ToolContext]:
    """A tool context as the runtime makes one: the workspace-write policy and checkpoints kept on
    disk (removed after) for a turn in progress."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as state:
        checkpoints = Checkpoints(Path(state) / "checkpoints")
        checkpoints.begin("turn-1", 0, "bench")
        policy = SandboxPolicy.create("workspace-write", work)
        yield ToolContext(cwd=work, session_id="bench", policy=policy, checkpoints=checkpoints)


def search_rows(meter: CpuMeter, root: Path) -> list[Row]:
    with session_context(root) as ctx:
        return _search_rows(meter, root, ctx)


def _search_rows(meter: CpuMeter, root: Path, ctx: ToolContext) -> list[Row]:
    rg = [rg_path(), "--no-config", "--hidden", "--glob=!.git"]
    cases: list[tuple[str, Callable[[], None], str, list[str]]] = [
        (
            "Glob **/*.py (all)",
            ok(Glob(), ctx, pattern="**/*.py"),
            "rg --files -g",
            ["--files", "-g", "**/*.py"],
        ),
        # a --glob that matches overrides .gitignore, so rg skips those rules: plain --files does
        # the work Glob must, and --sortr=modified adds the stat a match that newest-first needs
        ("Glob **/*.py (all)", ok(Glob(), ctx, pattern="**/*.py"), "rg --files", ["--files"]),
        (
            "Glob **/*.py (all)",
            ok(Glob(), ctx, pattern="**/*.py"),
            "rg --files --sortr=modified",
            ["--files", "--sortr=modified"],
        ),
        (
            "Glob **/*7.py (a tenth)",
            ok(Glob(), ctx, pattern="**/*7.py"),
            "rg --files -g",
            ["--files", "-g", "**/*7.py"],
        ),
        (
            "Glob **/module_1234*.py (few)",
            ok(Glob(), ctx, pattern="**/module_1234*.py"),
            "rg --files -g",
            ["--files", "-g", "**/module_1234*.py"],
        ),
        (
            "Grep count",
            ok(Grep(), ctx, pattern="def function", output_mode="count"),
            "rg --count",
            ["--count", "def function", str(root)],
        ),
        (
            "Grep files_with_matches",
            ok(Grep(), ctx, pattern="NEEDLE_TOKEN"),
            "rg -l",
            ["-l", "NEEDLE_TOKEN", str(root)],
        ),
        (
            "Grep content, 1 line a file",
            ok(Grep(), ctx, pattern=r"x \+ 3  #", output_mode="content"),
            "rg -n",
            ["-n", r"x \+ 3  #", str(root)],
        ),
    ]
    rows = []
    for label, ours, floor_label, floor_args in cases:
        floor_cpu, _ = measure(meter, program([*rg, *floor_args], root, (0, 1)))
        ours_cpu, ours_wall = measure(meter, ours)
        rows.append((label, floor_label, floor_cpu, ours_cpu, ours_wall))
    return rows


@contextlib.contextmanager
def big_file(megabytes: int = 50) -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(dir="/var/tmp"))
    path = work / "big.py"
    line = "value_{0} = compute({0}, 'some text on the line')\n"
    lines = megabytes * 1_000_000 // len(line.format(500_000))
    path.write_text("".join(line.format(i) for i in range(lines)))
    try:
        yield path
    finally:
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()


def edit_rows(meter: CpuMeter) -> list[Row]:
    with big_file() as path, session_context(path.parent) as ctx:
        assert not tool_call(Read(), ctx, file_path=str(path)).is_error
        copy = path.with_name("copy.py")  # sed works on its own copy: the tool's file stays as read
        copy.write_bytes(path.read_bytes())
        line = "value_450000 = compute(450000, 'some text on the line')"
        changed = line.replace("compute", "recompute")
        turns = {"tool": [(line, changed)], "sed": [(line, changed)]}  # each changes the line back and forth

        def edit() -> None:
            old, new = turns["tool"][-1]
            ok(Edit(), ctx, file_path=str(path), old_string=old, new_string=new)()
            turns["tool"].append((new, old))

        def sed() -> None:
            old, new = turns["sed"][-1]
            program(["sed", "-i", f"s/^{old}$/{new}/", str(copy)], path.parent)()
            turns["sed"].append((new, old))

        def missing() -> None:
            typo = line.replace("text", "txt")
            result = tool_call(Edit(), ctx, file_path=str(path), old_string=typo, new_string="x")
            assert result.is_error and "near line 450001" in str(result.content), result.content

        sed_missing = program(["sed", "-i", "s/some txt on the/x/", str(copy)], path.parent)
        return [
            ("Edit, one line", "sed -i", measure(meter, sed)[0], *measure(meter, edit)),
            (
                "Edit, old_string missing",
                "sed -i (no match)",
                measure(meter, sed_missing)[0],
                *measure(meter, missing),
            ),
        ]
