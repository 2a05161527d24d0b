"""`piton update`: which version is installed, how, and whether PyPI has a newer one; a pip install
into Piton's own environment is upgraded in place, a copy installed from a checkout is pointed at
`git pull`. `--check` only says."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from piton.core.records import record

PACKAGE = "piton-code"
INDEX_VAR = "PITON_INDEX_URL"  # another index speaking PyPI's JSON API (a mirror, a test's server)
_TIMEOUT_S = 5


@record(frozen=True)
class Install:
    version: str
    checkout: Path | None  # installed from this folder: git, not pip, updates it
    editable: bool = False  # the checkout itself runs (a contributor's install): a pull is enough


def installed() -> Install:
    from importlib import metadata

    from piton import __version__

    checkout: Path | None = None
    editable = False
    try:
        raw = metadata.distribution(PACKAGE).read_text("direct_url.json")
        origin = json.loads(raw) if raw else {}
        if "dir_info" in origin and str(origin.get("url", "")).startswith("file://"):
            checkout = Path(origin["url"].removeprefix("file://"))
            editable = bool(origin["dir_info"].get("editable"))
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        pass
    return Install(__version__, checkout, editable)


def latest() -> str:
    """The newest release on the index; OSError or ValueError when it cannot be asked."""
    base = os.environ.get(INDEX_VAR) or "https://pypi.org"
    with urllib.request.urlopen(f"{base.rstrip('/')}/pypi/{PACKAGE}/json", timeout=_TIMEOUT_S) as answer:
        version = json.load(answer)["info"]["version"]
    if not isinstance(version, str):
        raise ValueError("the index named no version")
    return version


def newer(candidate: str, current: str) -> bool:
    """Whether release `candidate` comes after `current` (release numbers; a pre-release counts
    as its release)."""

    def numbers(version: str) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", version.split("+")[0].split("rc")[0])[:4])

    return numbers(candidate) > numbers(current)


USAGE = """usage: piton update [--check]

Say which version is installed and whether a newer release is out. A pip install is upgraded in
place (--check: only say how); an install from a checkout is told how to update it."""


def update(argv: list[str]) -> int:
    if argv in (["--help"], ["-h"]):
        print(USAGE)
        return 0
    if any(a not in ("--check",) for a in argv):
        sys.stderr.write("usage: piton update [--check]\n")
        return 2
    mine = installed()
    where = f"from the checkout at {mine.checkout}" if mine.checkout else f"with {sys.executable}"
    print(f"piton {mine.version}, installed {where}")
    try:
        release = latest()
    except urllib.error.HTTPError as e:
        if e.code != 404:
            sys.stderr.write(f"piton: the package index answered {e.code} about {PACKAGE}\n")
            return 1
        print(f"The package index has no release of {PACKAGE}: this copy is the one there is")
        return 0
    except (OSError, ValueError, KeyError) as e:
        reason = getattr(e, "reason", None) or e
        sys.stderr.write(f"piton: could not ask the package index about {PACKAGE}: {reason}\n")
        return 1
    if not newer(release, mine.version):
        print(f"piton {mine.version} is up to date (the newest release is {release})")
        return 0
    print(f"piton {release} is available")
    if mine.checkout is not None:
        again = "" if mine.editable else " && python3 install.py"
        print(f"Update the checkout: cd {mine.checkout} && git pull{again}")
        return 0
    command = [sys.executable, "-m", "pip", "install", "--upgrade", f"{PACKAGE}=={release}"]
    if "--check" in argv:
        print(f"Update with: {' '.join(command)}")
        return 0
    print(f"Running: {' '.join(command)}")
    done = subprocess.run(command, stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        sys.stderr.write(f"piton: pip could not upgrade {PACKAGE} (exit {done.returncode})\n")
        return 1
    print(f"piton {release} is installed; it takes effect at the next start")
    return 0
