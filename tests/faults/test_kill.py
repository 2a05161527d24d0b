"""A `piton -p` killed outright (SIGKILL: an OOM kill, a closed SSH session with no time to clean
up) while Write replaces a large file: the file is always the old one or the new one, whole."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from piton.testing.script import ToolCall, reply
from tests.cli.test_piton_command import PITON
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S

SIZE = 10 * 1024 * 1024


def _writing(folder: Path, pid: int) -> bool:
    """Whether the process holds a file open in `folder` other than the one it replaces: Write's
    temporary file (unnamed until it is complete, so found through /proc)."""
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith(f"{folder}/") and not target.endswith("/big.txt"):
                    return True
    return False


def _wait_for_the_write(folder: Path, process: subprocess.Popen[bytes], limit: float) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and process.poll() is None:
        if _writing(folder, process.pid):
            return True
        time.sleep(0.0005)
    return False


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.05])
def test_a_kill_during_write_leaves_the_old_file_or_the_new_one(
    fake_api: FakeAnthropicAPI, project: Path, delay: float
) -> None:
    old = b"old line\n" * (SIZE // 9)
    new = "new text, longer line\n" * (SIZE // 22)
    target = project / "big.txt"
    target.write_bytes(old)
    target.chmod(0o640)
    fake_api.add(
        reply(ToolCall("Read", {"file_path": "big.txt", "limit": 1})),
        reply(ToolCall("Write", {"file_path": "big.txt", "content": new}), chunk=1 << 20),
        # what a run that outlives the write asks for next: a summary (10 MB of input fills the
        # context) and the last answer
        reply("summary"),
        reply("done"),
    )
    process = subprocess.Popen(
        [PITON, "-p", "rewrite big.txt", "--permission-mode", "acceptEdits"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        writing = _wait_for_the_write(project, process, limit=60)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=CEILING_S)
    data = target.read_bytes()
    assert data in (old, new.encode()), f"a torn file of {len(data):,} bytes"
    assert writing, "the run ended before the write was seen under way"
    assert target.stat().st_mode & 0o777 == 0o640  # old or new, it keeps its permissions
    assert sorted(p.name for p in project.iterdir()) == ["big.txt"], "a temporary file was left behind"
