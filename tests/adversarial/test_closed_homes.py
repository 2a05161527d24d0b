"""As root beside another account's closed home (Ubuntu makes homes 0750), the sandbox is built
from what it can reach: a credential folder nobody inside the sandbox could enter needs no hiding,
and bubblewrap could not make its mount point. Bash must still run, and Grep must never answer
"no matches" for a sandbox that did not start."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from piton.builtin_tools.bash import Bash
from piton.builtin_tools.grep import Grep
from tests.builtin_tools.helpers import call, context

pytestmark = pytest.mark.sandbox


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside /tmp, which the sandbox replaces with a private one."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))
    yield folder
    for path in (folder, *folder.rglob("*")):
        with contextlib.suppress(OSError):
            path.chmod(0o700)
    shutil.rmtree(folder, ignore_errors=True)


def test_a_credential_folder_the_sandbox_cannot_enter_breaks_neither_bash_nor_grep(
    tmp_path: Path, outside: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("needle\n")
    closed = outside / "closed"  # another account's home, as root sees it
    (closed / ".ssh").mkdir(parents=True)
    (closed / ".ssh" / "id_rsa").write_text("secret-key\n")
    closed.chmod(0o750)
    if os.geteuid() == 0:
        os.chown(closed, 65534, 65534)
    ctx = context(ws, private_paths=[closed / ".ssh"])
    ran = call(Bash(), ctx, command="cat a.txt")
    assert not ran.is_error and "needle" in str(ran.content), ran.content
    found = call(Grep(), ctx, pattern="needle")
    assert not found.is_error and "a.txt" in str(found.content), found.content
    leaked = call(Bash(), ctx, command=f"cat {closed}/.ssh/id_rsa")
    assert "secret-key" not in str(leaked.content)


def test_a_credential_file_that_comes_and_goes_never_stops_a_command(outside: Path, tmp_path: Path) -> None:
    """Another account creates and deletes a credential file while commands start: the sandbox
    looked (the file is there), then bubblewrap mounts over it (it is gone, and its mount point
    cannot be made on the read-only root). Each command must still run, or say it did not."""
    import asyncio
    import threading
    import time

    from piton.core.safety.policy import SandboxPolicy
    from piton.core.safety.sandbox import make_sandbox
    from piton.core.safety.shell import run_shell

    secret = outside / "token"
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy.create("workspace-write", ws, private_paths=[secret])
    sandbox = make_sandbox(policy)
    if sandbox.unavailable_reason() is not None:
        pytest.fail(f"the sandbox cannot start here: {sandbox.unavailable_reason()}")
    stop = threading.Event()

    def toggle() -> None:
        # a change every millisecond still lands between the look and the mounts of about one
        # command in four; changing it without a pause would keep a core busy for the whole test
        while not stop.is_set():
            secret.write_text("s3cret")
            time.sleep(0.001)
            secret.unlink()
            time.sleep(0.001)

    async def commands() -> list[str]:
        failures = []
        for attempt in range(150):
            done = await run_shell("echo ran", cwd=ws, sandbox=sandbox, timeout_s=30)
            if done.output.strip() != "ran" and "its sandbox could not start" not in done.output:
                failures.append(f"attempt {attempt}: exit {done.exit_code}: {done.output.strip()[:200]}")
        return failures

    thread = threading.Thread(target=toggle, daemon=True)
    thread.start()
    try:
        failures = asyncio.run(commands())
    finally:
        stop.set()
        thread.join()
    assert failures == [], failures[:3]
