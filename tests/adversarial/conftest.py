"""The shipped adversarial suite: each test is one attack on the trust boundary, run through the
real tools, the real sandbox and, where the path a user takes matters, the `piton` command's own
routing against the scripted API (a real process where its input or exit is what is attacked).
`.ci/run` runs this folder as root and again as an unprivileged user.

A race is attempted many times within a time bound: a regression shows up as a leaked secret or a
written file in some attempt, and the test names the attempt.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CEILING_S, piton_here

PITON = str(Path(sys.executable).with_name("piton"))
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- adversarial-secret"


def piton(*args: str, cwd: Path, timeout: float = CEILING_S) -> subprocess.CompletedProcess[str]:
    """`piton ARGS` in `cwd`, with no standard input, through the command's own routing in this
    process: an attack is on what Piton does with files, settings and the programs it starts, not on
    its process's start. Tests of what a process is (its input, its exit) start one with `PITON`."""
    return piton_here(*args, cwd=cwd, timeout=timeout)


@pytest.fixture
def home() -> Path:
    """The (test) home directory with the secrets an attack goes after: an SSH key, cloud tokens."""
    root = Path(os.environ["HOME"])
    (root / ".ssh").mkdir(mode=0o700, exist_ok=True)
    (root / ".ssh" / "id_rsa").write_text(SECRET + "\n")
    (root / ".aws").mkdir(exist_ok=True)
    (root / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = " + SECRET + "\n")
    return root
