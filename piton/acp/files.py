"""Read, Edit and Write through the editor (`fs/read_text_file`, `fs/write_text_file`), when it
offers them: the model sees unsaved changes, and its edits land in the editor's buffers. Piton's
path policy has decided before either call, and the file tools delegate only while no process the
model started is alive (`piton.builtin_tools.editor_buffers`). The tools run on worker threads;
each call crosses to the event loop and waits for the editor's answer there."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from piton.core.records import record

if TYPE_CHECKING:
    from acp.interfaces import Client

log = logging.getLogger("piton.acp")
ANSWER_S = 30.0  # an editor that does not answer: the disk is used instead
T = TypeVar("T")


@record
class EditorBuffers:
    client: Client
    session_id: str
    loop: asyncio.AbstractEventLoop
    reads: bool
    writes: bool

    def read_text(self, path: Path) -> str | None:
        if not self.reads:
            return None
        done, answer = self._wait(
            self.client.read_text_file(session_id=self.session_id, path=str(path)), path
        )
        return answer.content if done and answer is not None else None

    def write_text(self, path: Path, text: str) -> bool:
        if not self.writes:
            return False
        call = self.client.write_text_file(session_id=self.session_id, path=str(path), content=text)
        return self._wait(call, path)[0]

    def _wait(self, call: Coroutine[Any, Any, T], path: Path) -> tuple[bool, T | None]:
        """Whether the editor answered, and its answer (a write's may be empty)."""
        future = asyncio.run_coroutine_threadsafe(call, self.loop)
        try:
            return True, future.result(ANSWER_S)
        except Exception as e:  # the editor could not: Piton reads or writes the disk itself
            future.cancel()
            log.warning(
                "the editor could not handle %s (%s); Piton uses the disk", path, e or type(e).__name__
            )
            return False, None
