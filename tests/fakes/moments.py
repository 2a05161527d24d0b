"""What a fake server's handler threads tell the test: that something changed (a request arrived),
that a silence began (a stall's pause, a request left unanswered, a hold), and the holds the test
ends. Tests wait on these moments instead of sleeping and hoping the moment has come."""

from __future__ import annotations

import threading
from collections.abc import Callable

from tests.helpers import CEILING_S


class Moments:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.silences = 0  # silences begun so far
        self._held = 0  # holds reached so far
        self._released = 0  # holds the test has ended
        self._stopped = False

    def changed(self) -> None:
        """Something a waiting test may look at changed: have it look again."""
        with self._changed:
            self._changed.notify_all()

    def silence_began(self) -> None:
        with self._changed:
            self.silences += 1
            self._changed.notify_all()

    def hold(self) -> bool:
        """A silence that lasts until the test calls `release` (True) or the server stops (False)."""
        with self._changed:
            self.silences += 1
            self._held += 1
            mine = self._held
            self._changed.notify_all()
            self._changed.wait_for(lambda: self._released >= mine or self._stopped)
            return not self._stopped

    def release(self) -> None:
        """End the next hold (the one reached already, or the next to come)."""
        with self._changed:
            self._released += 1
            self._changed.notify_all()

    def stop(self) -> None:
        """The server stops: every hold ends, now and later."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()

    def start(self) -> None:
        with self._changed:
            self._stopped = False

    def wait_until(self, condition: Callable[[], bool], what: str, ceiling: float = CEILING_S) -> None:
        """Until `condition()` holds, looked at again at each change; fails after `ceiling` seconds."""
        with self._changed:
            if not self._changed.wait_for(condition, timeout=ceiling):
                raise AssertionError(f"no {what} within {ceiling:.0f} s")
