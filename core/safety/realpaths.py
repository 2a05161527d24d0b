"""Resolving many paths that share folders, each folder once.

`os.path.realpath` looks at every part of every path it is given: a few hundred credential
locations under a few homes, or the dozens of git-hook files at each project root, cost thousands of
`lstat` calls. A `Resolver` remembers what each folder resolved to, for as long as it lives: make
one for a batch of paths that must be seen at one moment, never keep one across moments.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class Resolver:
    """`os.path.realpath`, remembering each folder on the way. A part that is no link (or is
    missing) is kept as it is, as realpath does; a link is resolved whole."""

    def __init__(self) -> None:
        self._resolved: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        if not os.path.isabs(path) or "/./" in path or "/../" in path or path.endswith(("/.", "/..")):
            return os.path.realpath(path)
        known = self._resolved.get(path)
        if known is not None:
            return known
        parent, name = os.path.split(path)
        if parent == path or not name:
            found = os.path.realpath(path)
        else:
            candidate = os.path.join(self(parent), name)
            try:
                is_link = stat.S_ISLNK(os.lstat(candidate).st_mode)
            except OSError:
                is_link = False
            found = os.path.realpath(candidate) if is_link else candidate
        self._resolved[path] = found
        return found

    def path(self, path: Path) -> Path:
        return Path(self(str(path)))
