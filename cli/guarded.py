"""How a non-interactive run ends when something breaks outside the agent: a reader that went away
is exit 141 with nothing more said, and a bug of ours is one line on stderr (the trace only with
--verbose), never a traceback on its own."""

from __future__ import annotations

import contextlib
import os
import traceback
from collections.abc import Callable
from typing import TextIO


def run_guarded(work: Callable[[], int], *, stdout: TextIO, stderr: TextIO, verbose: bool) -> int:
    try:
        return work()
    except BrokenPipeError:  # the reader went away (`piton -p … | head`, a client gone): nobody to tell
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return 141
    except Exception as e:
        if verbose:
            traceback.print_exc(file=stderr)
        stderr.write(f"piton: internal error: {type(e).__name__}: {e} (--verbose shows the trace)\n")
        return 1
