"""Garbage collection around start-up, for each way Piton runs (`-p`, the REPL, the control
protocol, `piton acp`).

Opening a session allocates a great deal and frees little: modules, classes, pydantic models, tool
definitions. Collections while it runs find almost nothing to free, and every later full collection
would walk all of it again. So a run stops collection while it starts (`pause_collection`) and,
once its session is open, freezes what start-up made, leaving it out of later collections, and
collects again (`resume_collection`).
"""

from __future__ import annotations

import gc


def pause_collection() -> bool:
    """Stop collecting for start-up. True when collection was on, and is now for `resume_collection`
    to turn back on."""
    if not gc.isenabled():
        return False
    gc.disable()
    return True


def resume_collection(paused: bool) -> None:
    """Start-up is over: when `paused`, freeze what it made and collect again. Calling it again, or
    after an error, does nothing more."""
    if paused and not gc.isenabled():
        gc.freeze()
        gc.enable()
