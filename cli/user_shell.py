"""`!cmd` at the prompt: the user's own shell command, run in the sandbox as the work under way, its
output shown, and the model told of it (and of its output) with the next turn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # this module loads with the prompt, before the agent's modules: keep it light
    from piton.cli.turns import TurnDriver
    from piton.core.tools import ToolResult
    from piton.runtime import Runtime
    from piton.session import Session

_STOPPED = "  ⎿  Interrupted; the command and what it started were stopped."


class ShellHost(Protocol):
    """What a `!cmd` needs of the terminal (the REPL)."""

    async def ready(self) -> Runtime:
        """The session, waiting for it to load if need be."""
        ...

    @property
    def conversation(self) -> Session | None:
        """The session, once it has opened: it runs the command."""
        ...

    @property
    def driver(self) -> TurnDriver:
        """The work under way: Esc and Ctrl-C stop the command as they stop a turn."""
        ...

    def print_line(self, text: str, style: str = "") -> None: ...

    def refresh_files(self) -> None:
        """Files may have been made or removed: `@` completion lists them anew."""
        ...


async def user_shell(command: str, ui: ShellHost) -> None:
    """Run `command` now as the work under way (Esc or Ctrl-C stop it and what it started), show its
    output, and let the model see it next turn."""
    if not command:
        return
    try:
        runtime = await ui.ready()
    except Exception:  # the session did not start; that was said when it failed
        return
    from piton.core.safety.run_command import where_next

    context = runtime.agent.context
    folder = where_next(context, context.policy.workspace) if context.policy is not None else None
    if folder is not None:  # an earlier command's `cd` carries over, as it does for the model's
        ui.print_line(f"  (in {folder}, where the last command ended)", "dim")
    done: list[ToolResult] = []

    async def run() -> None:
        assert ui.conversation is not None
        done.append(await ui.conversation.run_shell(command))

    if not await ui.driver.hold(run(), doing=f"Running !{command[:40]}", interrupted=_STOPPED):
        runtime.agent.add_note(
            f"The user ran a shell command and stopped it:\n<bash-input>{command}</bash-input>"
        )
        return
    [result] = done
    ui.refresh_files()
    output = str(result.content)
    ui.print_line(output, "red" if result.is_error else "")
    if runtime.agent.capper is not None:
        output = str(runtime.agent.capper.apply("Bash", "user-shell", result).content)
    runtime.agent.add_note(
        "The user ran a shell command:\n"
        f"<bash-input>{command}</bash-input>\n<bash-output>{output}</bash-output>"
    )
