"""Output styles: how the model talks, chosen by the `outputStyle` setting or `/output-style`.

A style is a Markdown file with frontmatter (`name`, `description`, `keep-coding-instructions`) whose
body is added at the end of the system prompt, as in Claude Code. Files are found in
`.piton/output-styles` and `.claude/output-styles` of the project (nearest folder first, up to the
git root), then of the user's home (`~/.piton`, `~/.claude` or `$CLAUDE_CONFIG_DIR`), then in the
plugins' `output-styles` folders; the first of a name wins. Built-in styles come last: Default (Piton's
own prompt), Explanatory, Learning, Concise and Proactive. Names match without regard to case.

Any style but Default drops the prompt's instruction to be brief; a style from a file also drops the
coding instructions, unless its frontmatter says `keep-coding-instructions: true`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from piton.core.project.claude_home import user_config_dirs
from piton.core.project.roots import project_dirs
from piton.core.project.system_prompt import OutputStyle
from piton.skills.frontmatter import (
    FrontmatterError,
    bool_field,
    leaves_project,
    markdown_files,
    printable,
    read,
    shown,
    text_field,
)

if TYPE_CHECKING:
    from piton.skills.plugins import Plugin

DEFAULT = "Default"


BUILTIN = (
    OutputStyle(DEFAULT, "Piton's own: brief answers, focused on getting the work done", "", True, "builtin"),
    OutputStyle(
        "Explanatory",
        "Explains the choices it makes and the codebase's patterns as it works",
        "You help with the task and, as you work, explain why: the choices you make, the trade-offs, and "
        "the patterns of this codebase, so that the user understands it better afterwards.\n\n"
        "Before and after you write code, add a short insight in this form:\n"
        "`★ Insight ─────────────────────────────────────`\n"
        "[two or three points about this code and this change]\n"
        "`─────────────────────────────────────────────────`\n\n"
        "Keep the insights about the code at hand, not programming in general, and still finish the task.",
        True,
        "builtin",
    ),
    OutputStyle(
        "Learning",
        "Works with you: explains as it goes and asks you to write small, meaningful pieces",
        "The user wants to learn by doing. Share insights as you work (why a choice, which pattern, what "
        "trade-off), in the form `★ Insight` followed by two or three points.\n\n"
        "When a change holds a meaningful decision or a small self-contained piece of logic (5 to 10 lines) "
        "that the user would learn from writing, prepare the code around it, leave a `TODO(human)` comment "
        "where it goes, and ask the user to write it: say what it must do, what it receives, and the "
        "trade-offs to weigh. Ask for one contribution at a time and wait for it. Do the routine parts "
        "yourself.",
        True,
        "builtin",
    ),
    OutputStyle(
        "Concise",
        "Leads with the result; short answers, no narration",
        "Lead with the result. No preamble, no narration of what you are about to do, no closing "
        "summary of what you did. Keep answers to a few lines unless the user asks for more, and prefer "
        "a list or code to prose. Do the engineering work as thoroughly as ever: only the telling is short.",
        True,
        "builtin",
    ),
    OutputStyle(
        "Proactive",
        "Acts at once, making reasonable assumptions instead of stopping to ask",
        "Act without pausing for routine decisions: make a reasonable assumption, state it in one line, "
        "and carry on. Prefer doing to planning aloud. Ask only when a choice would be costly to undo or "
        "the request is ambiguous in a way that matters. The permission mode still decides what runs "
        "without the user's approval.",
        True,
        "builtin",
    ),
)


def load_output_style(path: Path, source: str) -> OutputStyle:
    meta, body = read(path)
    name = text_field(meta, "name") or path.stem
    if printable(name) != name:  # a file name is the project's to choose: never a terminal sequence
        raise FrontmatterError("its name holds control characters")
    if not body.strip():
        raise FrontmatterError("it has no instructions after the frontmatter")
    key = "keepCodingInstructions" if "keepCodingInstructions" in meta else "keep-coding-instructions"
    keep = bool_field(meta, key, False)
    return OutputStyle(
        name=name,
        description=text_field(meta, "description") or "",
        prompt=body.strip(),
        keep_coding=keep,
        source=source,
        path=path,
    )


def discover_output_styles(
    cwd: Path, home: Path | None = None, plugins: Iterable[Plugin] = ()
) -> tuple[dict[str, OutputStyle], list[str]]:
    """Every style by its name in lower case, first found wins (the built-in Default always)."""
    home = home if home is not None else Path.home()
    folders = [(d / c / "output-styles", "project") for d in project_dirs(cwd) for c in (".piton", ".claude")]
    seen = {f for f, _ in folders}  # the home folder may be the project's: read (and warn) once
    folders += [
        (d / "output-styles", "user") for d in user_config_dirs(home) if d / "output-styles" not in seen
    ]
    styles = {DEFAULT.lower(): BUILTIN[0]}
    warnings: list[str] = []
    found = [
        (path, source)
        for folder, source in folders
        for path in markdown_files(folder, warnings)
        if not (source == "project" and _refused(path, folder.parent, warnings))
    ]
    for plugin in plugins:
        for folder in plugin.paths("outputStyles", "output-styles"):
            found += [
                (path, "plugin")
                for path in (markdown_files(folder, warnings) if folder.is_dir() else [folder])
            ]
    for path, source in found:
        try:
            style = load_output_style(path, source)
        except FrontmatterError as e:
            warnings.append(f"{shown(path)}: {e}; skipped")
            continue
        if style.name.lower() == DEFAULT.lower():
            warnings.append(
                f"{shown(path)}: 'Default' is Piton's own prompt and cannot be redefined; skipped"
            )
            continue
        styles.setdefault(style.name.lower(), style)
    for builtin in BUILTIN:
        styles.setdefault(builtin.name.lower(), builtin)
    return styles, warnings


def is_default(style: OutputStyle) -> bool:
    return style.source == "builtin" and style.name == DEFAULT


def choose(styles: dict[str, OutputStyle], name: str | None, notices: list[str]) -> OutputStyle:
    """The style `name` (from the settings) chooses; Default, with a notice, for one that does not exist."""
    if name is None or not name.strip():
        return styles[DEFAULT.lower()]
    style = styles.get(name.strip().lower())
    if style is None:
        names = ", ".join(s.name for s in styles.values())
        notices.append(f"outputStyle {name!r}: no such output style (there are: {names}); using Default")
        return styles[DEFAULT.lower()]
    return style


def _refused(path: Path, config_dir: Path, warnings: list[str]) -> bool:
    """A project's style that leads outside the project is not read (it would become the prompt)."""
    why = leaves_project(path, config_dir)
    if why is not None:
        warnings.append(why)
    return why is not None
