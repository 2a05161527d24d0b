"""What slash commands may use of the terminal session: a small, public surface, so that commands
never reach into the REPL's workings (and the REPL's modules import no circle)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from piton.cli.turns import SessionTotals
    from piton.core.conversation.events import AgentEvent
    from piton.core.options import RunOptions
    from piton.runtime import Runtime


class Controller(Protocol):
    @property
    def options(self) -> RunOptions: ...

    @property
    def console(self) -> Console: ...

    @property
    def runtime(self) -> Runtime | None:
        """The session, once it has loaded."""
        ...

    @property
    def totals(self) -> SessionTotals: ...

    @property
    def busy(self) -> bool:
        """Whether the model is working (a turn, or /compact)."""
        ...

    def print_line(self, text: str, style: str = "") -> None: ...

    async def ask(self, question: str) -> str:
        """Show `question` in place of the prompt and wait for the answer line."""
        ...

    async def ready(self) -> Runtime:
        """The session, waiting for it to load if need be."""
        ...

    def edit(self, text: str) -> None:
        """Put `text` into the input for the user to edit and send."""
        ...

    def toggle_vi(self) -> bool:
        """Switch the prompt between vi and emacs keys; whether vi keys are on now."""
        ...

    def send(self, text: str) -> None:
        """A message for the model: now, or queued until the work under way ends."""
        ...

    async def work(self, events: AsyncIterator[AgentEvent], *, interrupted: str) -> bool:
        """Show `events` as the work under way (Esc stops it, saying `interrupted`); True when done."""
        ...

    async def switch(
        self, *, resume: str | None, add_dirs: Sequence[Path] = (), reopen: bool = False
    ) -> Runtime:
        """Leave this session for a new one (`resume=None`) or an earlier one; or reopen this one
        (`reopen`, or with more folders to work in: `add_dirs`) as the settings now say."""
        ...

    def command_names(self) -> list[tuple[str, str]]:
        """Every slash command, with its summary."""
        ...

    def exit(self) -> None: ...

    async def run_program(self, argv: list[str]) -> int:
        """Run a program of the user's in the terminal (an editor), the prompt put aside meanwhile;
        its exit status."""
        ...


class CommandContext(Protocol):
    """What a slash command's handler is given (`commands.Commands` is one): the terminal session, and
    where to print."""

    @property
    def ui(self) -> Controller: ...

    @property
    def console(self) -> Console: ...

    def say(self, text: str, style: str = "") -> None: ...
