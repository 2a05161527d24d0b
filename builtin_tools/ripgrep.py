"""Finding and running ripgrep for Glob and Grep."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path

RG_TIMEOUT_S = 60.0
_BASE_ARGS = ("--no-config", "--color=never", "--hidden", "--glob=!.git", "--null")


class RipgrepMissing(Exception):
    pass


def mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


@cache
def rg_path() -> str:
    """The `rg` next to this Python (the ripgrep wheel puts it there) or on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("rg")
    if found is None:
        raise RipgrepMissing("ripgrep (rg) is not installed: pip install ripgrep, or install it from your OS")
    return found


@dataclass(frozen=True, slots=True)
class RgOutput:
    code: int  # 0 matches, 1 none, 2 an error
    text: str
    error: str

    def paths(self) -> list[str]:
        """For --files and -l: rg's --null ends each path with a NUL and nothing else."""
        return [p for p in self.text.split("\0") if p]

    def records(self) -> list[tuple[str, str]]:
        """For content and -c: one (path, rest) per line; separator lines (`--`) have no path."""
        out = []
        for line in self.text.split("\n"):
            if line:
                path, sep, rest = line.partition("\0")
                out.append((path, rest) if sep else ("", line))
        return out


async def run_rg(args: list[str], cwd: Path) -> RgOutput:
    # rg anchors globs at its working directory; from / that keeps it out of /proc and /sys
    system = ["--glob=!/proc", "--glob=!/sys"] if str(cwd) == "/" else []
    process = await asyncio.create_subprocess_exec(
        rg_path(),
        *_BASE_ARGS,
        *system,
        *args,
        cwd=cwd,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
        },  # no secrets to find in /proc
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), RG_TIMEOUT_S)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise
    return RgOutput(
        process.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace").strip()
    )


def list_files(cwd: Path, limit: int) -> list[str]:
    """The project's files as ripgrep lists them (gitignore-aware, hidden ones too, never `.git`),
    relative to `cwd` and sorted; empty when ripgrep cannot say within a few seconds."""
    import subprocess

    try:
        done = subprocess.run(
            [rg_path(), "--files", "--hidden", "--glob=!.git"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired, RipgrepMissing):
        return []
    return sorted(done.stdout.splitlines()[:limit])
