"""Running the agent on screen: one driver for a turn and for /compact alike.

The driver owns what "the model is working" means: the task under way (Esc and Ctrl-C cancel it),
the messages typed meanwhile (queued, sent when it ends, put back into the prompt after an
interrupt), the renderer's begin and end, and the session's running totals.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import field
from typing import TYPE_CHECKING, Any

from piton.core.records import record

if TYPE_CHECKING:  # this module loads with the prompt, before the agent's modules: keep it light
    from piton.cli.render import Renderer
    from piton.core.conversation.events import AgentEvent
    from piton.core.conversation.usage import Usage


_ALONE = ("/", "!")  # queued lines that go on their own: a command or skill, a shell command


def prompt_echo(text: str) -> str:
    """A message as the scrollback shows it once sent: after the prompt's mark, its later lines
    indented under the first."""
    return "❯ " + text.replace("\n", "\n  ")


@record
class SessionTotals:
    """What this terminal session has used, across turns and models (for /cost and the status line)."""

    by_model: dict[str, Usage] = field(default_factory=dict)
    cost_usd: float = 0.0

    def count(self, event: AgentEvent, model: str) -> None:
        """Add what `event` cost, if anything; `model` is the one in use when the event says none."""
        from piton.core.conversation.events import Compacted, MessageDone, SubagentEvent
        from piton.core.conversation.usage import Usage

        if isinstance(event, SubagentEvent):  # what subagents spend is the session's cost too
            event = event.event
        if isinstance(event, MessageDone | Compacted) and event.usage is not None:
            used = event.model or model
            self.by_model[used] = self.by_model.get(used, Usage()) + event.usage
            self.cost_usd += event.usage.cost_usd(used)


class TurnDriver:
    def __init__(
        self,
        *,
        model: Callable[[], str],
        submit: Callable[[str], None],
        restore: Callable[[str], None],
        changed: Callable[[], None],
        print_line: Callable[[str, str], None],
    ) -> None:
        self.renderer: Renderer | None = None  # set once the session has loaded
        self.totals = SessionTotals()
        self.queue: list[str] = []
        self.task: asyncio.Task[Any] | None = None
        self._model = model  # the model in use, for events that do not name theirs
        self._submit = submit  # starts a turn for a message
        self._restore = restore  # puts text back into the prompt
        self._changed = changed  # something on screen changed
        self._print = print_line

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        self.task = asyncio.ensure_future(work)
        self._changed()

    def send(self, text: str) -> None:
        """A message for the model: now, or when the work under way ends."""
        if self.busy:  # shown above the prompt while it waits (see `PromptView.message`)
            self.queue.append(text)
            self._changed()
        else:
            self._submit(text)

    def interrupt(self) -> bool:
        if self.busy:
            assert self.task is not None
            self.task.cancel()
            return True
        return False

    async def drive(self, events: AsyncIterator[AgentEvent], *, interrupted: str | None = None) -> bool:
        """Show `events` to their end, counting what they cost; True when they ended by themselves.

        Called from inside the work under way (a turn, or a command such as /compact, which makes
        itself the work so that Esc stops it). On an interrupt, `interrupted` (or the renderer's own
        line) says so, and what was queued goes back to the prompt; otherwise the queue goes next."""
        assert self.renderer is not None, "work is driven only once the session has loaded"
        renderer = self.renderer

        async def show() -> None:
            async for event in events:
                renderer.handle(event)
                self.totals.count(event, self._model())
                self._changed()

        return await self.hold(show(), interrupted=interrupted)

    async def hold(
        self, work: Awaitable[None], *, interrupted: str | None = None, doing: str | None = None
    ) -> bool:
        """Run `work` as the work under way: the spinner turns (saying `doing` when the events do not
        say what is happening), Esc and Ctrl-C cancel it, and messages typed meanwhile wait for it."""
        assert self.renderer is not None, "work is driven only once the session has loaded"
        self.task = asyncio.current_task()
        self.renderer.begin(doing)
        self._changed()
        try:
            await work
        except asyncio.CancelledError:
            if interrupted is None:
                self.renderer.interrupted()
            else:
                self.renderer.end()
                self._print(interrupted, "yellow")
            self._restore_queue()
            self._changed()
            return False
        except Exception:
            self.renderer.end()
            self._changed()
            raise
        self.renderer.end()
        self._changed()
        self.send_queued()
        return True

    def interrupted_before_start(self, text: str) -> None:
        """Work cancelled before it began: the message and whatever was queued go back to the prompt."""
        self._print("  ⎿  Interrupted before it was sent; it is back in the prompt.", "yellow")
        self.queue.insert(0, text)
        self._restore_queue()
        self._changed()

    def send_queued(self) -> None:
        """What was typed during the work goes next: plain messages together, a /skill line or a !shell
        line on its own (its arguments are its own)."""
        if not self.queue:
            return
        if self.queue[0].startswith(_ALONE):
            text = self.queue.pop(0)
        else:
            plain = next((i for i, t in enumerate(self.queue) if t.startswith(_ALONE)), len(self.queue))
            text = "\n\n".join(self.queue[:plain])
            del self.queue[:plain]
        self._print(prompt_echo(text), "bold cyan")  # under the answer it waited for
        self._submit(text)

    def _restore_queue(self) -> None:
        if self.queue:
            self._restore("\n\n".join(self.queue))
        self.queue.clear()
