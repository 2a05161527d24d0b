"""Piton's own modules compiled ahead, for the tests and benchmarks that start many `piton` processes."""

from __future__ import annotations

import compileall
from pathlib import Path


def compile_package() -> None:
    """Byte-compiles Piton's sources where they are stale. Where PYTHONDONTWRITEBYTECODE is set (CI
    machines often set it), a `piton` process saves nothing it compiles, so each would compile every
    module again: a third of its start-up, which a user's install (compiled by pip or install.py)
    never pays."""
    package = Path(__file__).resolve().parent.parent
    # compile_dir does not follow the checkout's links to its subpackages: each is given by itself
    for folder in sorted({package, *(p.resolve() for p in package.iterdir() if p.is_dir())}):
        compileall.compile_dir(folder, quiet=2, workers=0)
