"""`/output-style [name]`: show the output styles found and switch the session to one. The choice is
saved as `outputStyle` in the project's `.piton/settings.local.json` (Claude Code keeps it in its local
file too) and the session is reopened at once, so the next message is answered in the new style."""

from __future__ import annotations

from typing import TYPE_CHECKING

from piton.cli.config_command import ConfigError, save
from piton.core.project.settings_sources import shown

if TYPE_CHECKING:
    from piton.cli.controller import Controller
    from piton.core.project.system_prompt import OutputStyle


def _label(style: OutputStyle) -> str:
    where = "" if style.source == "builtin" else f" [{style.source}]"
    return f"{style.name}{where}"


async def output_style(ui: Controller, args: str) -> None:
    runtime = await ui.ready()
    styles = list(runtime.output_styles.values())
    current = runtime.output_style
    choice = args.strip()
    if not choice:
        for number, each in enumerate(styles, start=1):
            mark = "●" if each == current else " "
            about = f" — {each.description}" if each.description else ""
            ui.print_line(f" {mark} {number}. {_label(each)}{about}")
        answer = (await ui.ask("Output style? (number or name, Enter to keep it) › ")).strip()
        if not answer:
            return
        choice = (
            styles[int(answer) - 1].name if answer.isdigit() and 1 <= int(answer) <= len(styles) else answer
        )
    style = runtime.output_styles.get(choice.lower())
    if style is None:
        ui.print_line(
            f"/output-style: no style named {choice!r} (there are: {', '.join(s.name for s in styles)})",
            "yellow",
        )
        return
    if style == current:
        ui.print_line(f"The output style is already {style.name}.", "dim")
        return
    if ui.busy:
        ui.print_line("/output-style: the model is working; change the style once the turn is over", "yellow")
        return
    try:
        saved = save("local", ui.options.cwd, ["outputStyle"], style.name)
    except (ConfigError, OSError) as e:
        ui.print_line(f"/output-style: {getattr(e, 'strerror', None) or e}", "yellow")
        return
    runtime = await ui.switch(resume=runtime.log.session_id, reopen=True)
    now = runtime.output_style
    if now is None or now.name != style.name:  # --settings or the machine's policy sets it and wins
        ui.print_line(
            f"Saved {style.name} in {shown(saved)}, but another setting chooses "
            f"{now.name if now else 'Default'} and wins (--settings or managed settings)",
            "yellow",
        )
        return
    ui.print_line(f"Output style: {style.name} (saved in {shown(saved)}); it applies from your next message")
