"""A message typed at the prompt: sent as the model's turn once the session has loaded (with the images
pasted into it), and what follows each turn: the status line anew, a word (once) when checkpoints
could not be kept, and `@` completion's file list anew."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from piton.cli.user_shell import ShellHost

if TYPE_CHECKING:  # this module loads with the prompt, before the agent's modules: keep it light
    from piton.cli.clipboard import Pasted
    from piton.cli.status import StatusCommand
    from piton.cli.turns import SessionTotals
    from piton.runtime import Runtime


class MessageHost(ShellHost, Protocol):
    """What a message's turn needs of the terminal (the REPL), beyond what a `!cmd` needs."""

    @property
    def pastes(self) -> Pasted:
        """Ctrl-V's, attached where the message names them (`[Image #N]`)."""
        ...

    @property
    def status(self) -> StatusCommand | None:
        """The settings' statusLine command, run again after each turn."""
        ...

    @property
    def totals(self) -> SessionTotals: ...

    def redraw(self) -> None: ...


class MessageTurns:
    """Messages typed at the prompt, each sent as a turn of the model's."""

    def __init__(self, ui: MessageHost) -> None:
        self.ui = ui
        self._told_checkpoints = False

    async def turn(self, text: str) -> None:
        """Send `text` as the work under way, once the session has loaded."""
        ui = self.ui
        try:
            runtime = await ui.ready()
        except asyncio.CancelledError:  # Esc before the session had loaded: nothing was sent
            ui.driver.interrupted_before_start(text)
            return
        except Exception:  # the session did not start; that was said when it failed
            return
        from piton.session import NoTurn

        assert ui.conversation is not None
        turn = ui.conversation.turn(
            text, mentions=True, extra=lambda content: ui.pastes.attach(text, content)
        )
        try:
            await ui.driver.drive(turn)
        except NoTurn as e:  # an MCP prompt that is unknown or could not be fetched: said, nothing sent
            ui.print_line(str(e), "yellow")
            return
        except Exception as e:
            ui.print_line(f"piton: internal error: {type(e).__name__}: {e}", "bold red")
        self._after(runtime)

    def _after(self, runtime: Runtime) -> None:
        ui = self.ui
        if ui.status is not None:
            ui.status.refresh(runtime, ui.totals, ui.redraw)
        checkpoints = runtime.agent.context.checkpoints
        if checkpoints is not None and checkpoints.problem is not None and not self._told_checkpoints:
            self._told_checkpoints = True  # /rewind cannot restore what was not kept: said once
            ui.print_line(f"piton: {checkpoints.problem}; /rewind may not restore every file", "yellow")
        ui.refresh_files()
