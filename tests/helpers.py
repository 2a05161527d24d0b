"""Small helpers shared by tests."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

# The longest a test waits for something that happens far sooner: a safety net against a hang, never
# a measure. Generous, since on a loaded machine (a CI runner busy with other jobs) starting one
# `piton` can take a minute.
CEILING_S = 300.0
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


def npm_installed(tmp_path_factory: pytest.TempPathFactory, spec: str) -> Path:
    """A fresh folder with the npm package `spec` (`name@version`) installed in its node_modules, for
    a session-scoped fixture to make once; skips the test where Node.js is not installed."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip(f"Node.js is not installed: {spec} cannot run here")
    folder = tmp_path_factory.mktemp("npm")
    (folder / "package.json").write_text('{"name": "piton-npm-test", "private": true}\n')
    done = subprocess.run(
        ["npm", "install", "--omit=optional", "--no-audit", "--no-fund", spec],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=NPM_S,
        check=False,
    )
    assert done.returncode == 0, f"npm could not install {spec}: {done.stderr[-2000:]}"
    return folder


def node_said(script: str, *args: str, cwd: Path) -> Any:
    """Run the Node script `script` in `cwd` (where its node_modules are) as a client of `piton`
    runs, and read the JSON it prints last. Its environment has no IS_SANDBOX, which would tell the
    `piton` it starts that the machine is its sandbox."""
    done = subprocess.run(
        ["node", script, *args],
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if k != "IS_SANDBOX"},
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


def piton_here(*args: str) -> subprocess.CompletedProcess[str]:
    """`piton ARGS` run in this process as its command line runs them, with no input and the output
    captured: a subcommand by the function it calls, anything else by the app's parser (lists of
    tools spread first) and the run. For tests of what an option or a subcommand does, where the
    process itself is not under test (starting one costs more than most runs)."""
    import contextlib
    import gc
    import importlib
    import io

    from typer.testing import CliRunner

    from piton.cli.app import app
    from piton.cli.command import expand_lists

    if args and args[0] in SUBCOMMANDS:
        module, name = SUBCOMMANDS[args[0]].split(":")
        command: Callable[[list[str]], int] = getattr(importlib.import_module(module), name)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = command(list(args[1:]))
        return subprocess.CompletedProcess([PITON, *args], code, out.getvalue(), err.getvalue())
    try:
        ran = CliRunner().invoke(app, expand_lists(list(args)))
    finally:
        gc.unfreeze()  # a run freezes what its start-up made, for its own life: not the test process's
    if ran.exception is not None and not isinstance(ran.exception, SystemExit):
        raise ran.exception
    return subprocess.CompletedProcess([PITON, *args], ran.exit_code, ran.stdout, ran.stderr)


# the function each `piton NAME …` calls with the arguments after NAME (as `cli/main.py` routes them)
SUBCOMMANDS = {
    "config": "piton.cli.config_command:main",
    "mcp": "piton.cli.mcp_command:main",
    "plugin": "piton.cli.plugin_command:main",
}
