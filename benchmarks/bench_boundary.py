"""What the trust boundary costs, each next to the unguarded way measured in the same run: opening a
file with no symlink followed against a plain open, an atomic Write (temp file, fsync, rename)
against writing in place, ripgrep inside the read-only sandbox against ripgrep run directly, and the
guard's snapshot and restore around a command (including the check for planted settings files)
against the command alone, and a command left running in the background from start to end (its
held folders, the checks for settings files before and after, its stricter sandbox) against the
command alone. Per-command costs against a bare bwrap are benchmarks/bench_sandbox.py's.

    python benchmarks/bench_boundary.py [files]    (default 50,000 generated files, kept in /var/tmp)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_tools import median_ms, tree  # noqa: E402
from piton.builtin_tools.ripgrep import rg_path, run_rg, search_sandbox  # noqa: E402
from piton.core.safety import guard, pinned  # noqa: E402
from piton.core.safety.policy import SandboxPolicy  # noqa: E402
from piton.core.safety.sandbox import make_sandbox  # noqa: E402
from piton.core.safety.shell import run_shell  # noqa: E402
from piton.core.shells import BackgroundShells  # noqa: E402

Row = tuple[str, str, float, str, float]


def file_rows() -> list[Row]:
    work = Path(tempfile.mkdtemp(dir="/var/tmp")) / "src" / "pkg"
    work.mkdir(parents=True)
    small = work / "module.py"
    small.write_bytes(b"x = 1\n" * 200)

    def plain_read() -> bytes:
        with open(small, "rb") as f:
            return f.read()

    def pinned_read() -> bytes:
        with pinned.opened(small) as fd:
            return pinned.read_all(fd)

    data = b"y = 2\n" * 200
    return [
        (
            "open+read 1 KB",
            "open()",
            median_ms(plain_read, 200),
            "no symlink followed",
            median_ms(pinned_read, 200),
        ),
        (
            "write 1 KB",
            "in place",
            median_ms(lambda: small.write_bytes(data), 50),
            "temp+fsync+rename",
            median_ms(lambda: pinned.replace(small, data), 50),
        ),
    ]


def grep_rows(files: int) -> list[Row]:
    root = tree(files)
    policy = SandboxPolicy.create("workspace-write", root)
    rg_binary = rg_path()
    sandbox = search_sandbox(policy, root, rg_binary)
    assert sandbox is not None, "the sandbox cannot start here"
    args = ["--files-with-matches", "--regexp", "NEEDLE_TOKEN", "--", str(root)]
    small = root / "pkg0000"

    def rg(base: Path, boxed: bool) -> None:
        asyncio.run(
            run_rg([*args[:-1], str(base)], cwd=base, rg=rg_binary, sandbox=sandbox if boxed else None)
        )

    return [
        (
            f"Grep {files:,} files",
            "rg directly",
            median_ms(lambda: rg(root, False)),
            "rg in the sandbox",
            median_ms(lambda: rg(root, True)),
        ),
        (
            "Grep 100 files",
            "rg directly",
            median_ms(lambda: rg(small, False), 20),
            "rg in the sandbox",
            median_ms(lambda: rg(small, True), 20),
        ),
    ]


def guard_rows(files: int) -> list[Row]:
    root = tree(files)
    policy = SandboxPolicy.create("workspace-write", root)
    sandbox = make_sandbox(policy)

    def command() -> None:
        asyncio.run(run_shell("true", cwd=root, sandbox=sandbox, timeout_s=30))

    def guarded() -> None:
        before = guard.snapshot(policy)
        command()
        guard.restore(before)

    lasting = policy.left_running()
    lasting_sandbox = make_sandbox(lasting)

    def background() -> None:
        async def go() -> None:
            shells = BackgroundShells()
            shell = await shells.start("true", cwd=root, sandbox=lasting_sandbox, policy=lasting)
            await shell.wait()

        asyncio.run(go())

    return [
        (
            f"Bash `true`, {files:,}-file tree",
            "command alone",
            median_ms(command),
            "with the guard",
            median_ms(guarded),
        ),
        (
            f"`true` in background, {files:,}",
            "command alone",
            median_ms(command),
            "start to end, swept",
            median_ms(background),
        ),
    ]


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    print("The trust boundary's cost (median, ms)\n")
    print(f"{'operation':<30} {'baseline':<22} {'ms':>8}   {'guarded':<22} {'ms':>8} {'ratio':>6}")
    for label, base_name, base, ours_name, ours in [*file_rows(), *grep_rows(files), *guard_rows(files)]:
        print(f"{label:<30} {base_name:<22} {base:>8.3f}   {ours_name:<22} {ours:>8.3f} {ours / base:>6.2f}")


if __name__ == "__main__":
    main()
