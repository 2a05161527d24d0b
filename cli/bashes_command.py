"""`/bashes`: the session's background shells (commands the model left running), their status and
latest output, and stopping them: `/bashes`, `/bashes show ID`, `/bashes kill ID|all`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from piton.cli.controller import Controller
    from piton.core.shells import BackgroundShell

_SHOWN_LINES = 40


def duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


def state(shell: BackgroundShell) -> str:
    if shell.status == "failed":
        return f"failed (exit {shell.exit_code})"
    return shell.status


def ended_line(shell: BackgroundShell) -> str:
    """What the terminal says when a shell ends while nobody is looking."""
    return f"Background shell {shell.id} {state(shell)} after {duration(shell.runtime_s())}: {shell.command}"


async def bashes(ui: Controller, args: str) -> None:
    runtime = await ui.ready()
    shells = runtime.agent.context.shells
    words = args.split()
    if words[:1] == ["kill"] and len(words) > 1:
        chosen = [s for s in shells if s.running] if words[1:] == ["all"] else []
        for shell_id in [] if words[1:] == ["all"] else words[1:]:
            shell = shells.get(shell_id)
            if shell is None:
                ui.print_line(f"No background shell {shell_id}", "yellow")
            elif not shell.running:
                ui.print_line(f"{shell.id} has already ended ({state(shell)})", "dim")
            else:
                chosen.append(shell)
        for shell in chosen:
            shell.kill()
            await shell.wait(5.0)
            if shell.running:  # once it ends, the line that says so is the terminal's (ended_line)
                ui.print_line(f"Asked {shell.id} to stop; it has not ended yet: {shell.command}", "yellow")
        return
    if words[:1] == ["show"] and len(words) == 2:
        shell = shells.get(words[1])
        if shell is None:
            ui.print_line(f"No background shell {words[1]}", "yellow")
            return
        took = duration(shell.runtime_s())
        ui.print_line(f"{shell.id} · {state(shell)} · {took} · {shell.command}", "bold")
        lines = shell.tail().splitlines()[-_SHOWN_LINES:]
        for line in lines or ["(no output yet)"]:
            ui.print_line(f"  {line}", "" if lines else "dim")
        return
    if words:
        ui.print_line("Usage: /bashes, /bashes show ID, /bashes kill ID|all", "yellow")
        return
    listed = list(shells)
    if not listed:
        ui.print_line("No background shells. The model starts one with Bash run_in_background.", "dim")
        return
    width = max(len(state(s)) for s in listed)
    for shell in listed:
        about = f"  ({shell.description})" if shell.description else ""
        took = duration(shell.runtime_s())
        line = f" {shell.id:<8} {state(shell):<{width}}  {took:>8}  {shell.command}{about}"
        ui.print_line(line, "" if shell.running else "dim")
    ui.print_line("/bashes show ID prints its latest output; /bashes kill ID (or all) stops it.", "dim")
