"""Where Piton keeps the user's state (transcripts, memory notes, the prompt's history). Kept apart
from the session modules, which load pydantic: the REPL finds its history file here before it draws
its prompt, and the session's modules load beside the prompt instead."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path


def state_dir() -> Path:
    """Piton's folder in the user's state directory: `$XDG_STATE_HOME/piton` (by default
    `~/.local/state/piton`), or `~/Library/Application Support/piton` on macOS."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "piton"
    xdg = os.environ.get("XDG_STATE_HOME", "")  # the XDG rule: a relative path is ignored
    return Path(xdg if os.path.isabs(xdg) else Path.home() / ".local" / "state") / "piton"


def private_state_dir() -> Path:
    """`state_dir()`, made if missing and closed to other accounts (0700): it holds transcripts,
    memory notes and the prompt's history. A folder an earlier version left open is closed too."""
    folder = state_dir()
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = folder.stat()
        if st.st_mode & 0o077 and st.st_uid == os.getuid():
            os.chmod(folder, 0o700)
    return folder
