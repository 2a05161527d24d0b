"""Claude Code beside Piton: its install in a cache, a home of its own that skips its first-run
screens and keeps it off the network; and what watches either client: the CPU of its processes, and
a pseudo-terminal that drives its REPL. Used by `bench_vs_claude.py`.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import resource
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pexpect

CACHE = Path.home() / ".cache" / "piton-bench" / "claude-code"
PACKAGE = "@anthropic-ai/claude-code"

# Without these it resolves api.anthropic.com and checks for updates during a run; with them, the
# only connections it opens go to ANTHROPIC_BASE_URL (checked with `strace -e trace=connect,sendto`).
QUIET = {
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def install() -> None:
    """`npm install` of the newest release into the cache (the package's postinstall links the native
    binary); `@latest`, since a bare name keeps whatever release the cache already holds."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("bench_vs_claude: --install needs npm on PATH")
    CACHE.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", f"{PACKAGE}@latest"]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def find(prefer_cache: bool) -> str | None:
    """The `claude` to measure: the cache's after `--install`, else one on PATH, else the cache's."""
    cached = CACHE / "node_modules" / ".bin" / "claude"
    in_cache = str(cached) if cached.exists() else None
    on_path = shutil.which("claude")
    return (in_cache or on_path) if prefer_cache else (on_path or in_cache)


def version(claude: str) -> str:
    out = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=60, check=False)
    return out.stdout.strip() or f"(--version said nothing; exit {out.returncode})"


def claude_env(base: dict[str, str], home: Path, project: Path, api_key: str) -> dict[str, str]:
    """`base` with `home`, and a config dir in it whose `.claude.json` has already answered the
    first-run screens: the onboarding (theme), the folder's trust dialog and the "use this API key?"
    question (approved keys are stored by their last 20 characters)."""
    config = home / ".claude"
    config.mkdir(parents=True)
    answered = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {str(project.resolve()): {"hasTrustDialogAccepted": True}},
    }
    (config / ".claude.json").write_text(json.dumps(answered))
    return {**base, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), **QUIET}


def cpu_so_far(pid: int) -> float | None:
    """CPU seconds of a running process and the children it has reaped: its live threads to the
    nanosecond (schedstat), or the whole process in clock ticks when that is more (threads that
    have ended are only there, such as one that loaded modules in the background)."""
    try:
        live = 0.0
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):  # a thread that just ended
                live += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0]) / 1e9
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        whole = (int(fields[11]) + int(fields[12])) / tick
        return max(live, whole) + (int(fields[13]) + int(fields[14])) / tick
    except (OSError, ValueError):
        return None


class ChildCpu:
    """CPU seconds of the processes started through `wrap`: counted by a cgroup v1 cpuacct group of
    our own where one can be made (as root), which sees every descendant, sandboxed commands included
    (bubblewrap's init does not wait for them, so getrusage misses them); else by the rusage of the
    children this process has waited for."""

    def __init__(self) -> None:
        self.group: Path | None = None
        with contextlib.suppress(OSError, StopIteration):
            lines = Path("/proc/self/cgroup").read_text().splitlines()
            mine = next(line.split(":", 2)[2] for line in lines if "cpuacct" in line.split(":")[1].split(","))
            group = Path("/sys/fs/cgroup/cpuacct", mine.lstrip("/"), f"piton-vs-claude-{os.getpid()}")
            group.mkdir()
            self.group = group

    @property
    def counts_all(self) -> bool:
        return self.group is not None

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started inside the group (a shell that joins it, then execs: the same pid)."""
        if self.group is None:
            return argv
        return ["/bin/sh", "-c", f'echo $$ > {self.group}/cgroup.procs && exec "$@"', "sh", *argv]

    def seconds(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def close(self) -> None:
        if self.group is not None:
            with contextlib.suppress(OSError):  # busy if something started in it still runs
                self.group.rmdir()


# What a terminal emulator answers; a REPL that asks and hears nothing waits for a timeout instead.
_ANSWERS = (
    (b"\x1b[6n", b"\x1b[1;1R"),  # cursor position (prompt_toolkit)
    (b"\x1b[c", b"\x1b[?1;2c"),  # primary device attributes (Ink sends it after its XTVERSION query)
)


class Terminal:
    """A program in a pseudo-terminal (spawned as bench_repl.py spawns the REPL), read by a thread that
    notes when each piece of output arrived, so a time on screen does not depend on when this process
    looks, and that answers a terminal's queries."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        self.child = pexpect.spawn(argv[0], argv[1:], cwd=str(cwd), env=env, dimensions=(30, 100))
        self._output = bytearray()
        self._ends: list[int] = []  # the offset after each piece read ...
        self._times: list[float] = []  # ... and when it arrived
        self._closed = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="pty-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        fd = self.child.child_fd
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the child is gone (EIO) or close() closed the fd
                data = b""
            now = time.perf_counter()
            with self._changed:
                if not data:
                    self._closed = True
                    self._changed.notify_all()
                    return
                self._output += data
                self._ends.append(len(self._output))
                self._times.append(now)
                self._changed.notify_all()
            for query, answer in _ANSWERS:
                if query in data:
                    os.write(fd, answer)

    def mark(self) -> int:
        """The output's length now: a starting point for `wait_for`."""
        with self._changed:
            return len(self._output)

    def wait_for(self, needle: bytes, since: int = 0, timeout: float = 60.0) -> float:
        """When `needle` (whole) first arrived at or after offset `since`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while (found := self._output.find(needle, since)) < 0:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    tail = bytes(self._output[-600:])
                    raise RuntimeError(f"{needle!r} never showed on screen; the last output: {tail!r}")
                self._changed.wait(left)
            return self._times[bisect.bisect_left(self._ends, found + len(needle))]

    def wait_quiet(self, seconds: float, timeout: float = 30.0) -> None:
        """Until nothing has been written for `seconds`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while time.monotonic() < deadline:
                last = self._times[-1] if self._times else self.started
                left = last + seconds - time.perf_counter()
                if left <= 0 or self._closed:
                    return
                self._changed.wait(left)

    def type(self, keys: bytes) -> float:
        """Writes `keys` as typed; returns when they were written."""
        os.write(self.child.child_fd, keys)
        return time.perf_counter()

    def close(self) -> None:
        # the child first: its end of the pty closing is what wakes the reader blocked in read()
        self.child.terminate(force=True)
        self._reader.join(timeout=5)
        self.child.close(force=True)
