"""`piton --help`: one screen, written from the table of flags (`cli/flags.py`) without loading the
argument parser: the options grouped as a user looks for them, then the commands, the environment
variables that matter most and two examples. The flags only clients of the SDK protocol send are
named on one line; the manual (`docs/print-mode.md`) says what each does."""

from __future__ import annotations

import shutil
import textwrap

from piton.cli.flags import FLAGS, Flag

_WIDTH = 100  # at most; narrower when the terminal is
_NAMES = 34  # the column the help lines start at; on a narrow terminal they go under the names
_NARROW = 80
# what a flag's value is called, where its kind alone would say too little
_VALUE = {
    "resume": "ID",
    "session_id": "UUID",
    "model": "MODEL",
    "fallback_model": "MODEL",
    "provider": "NAME",
    "system_prompt": "TEXT",
    "append_system_prompt": "TEXT",
    "allowed_tools": "RULES",
    "disallowed_tools": "RULES",
    "tools": "NAMES",
    "json_schema": "SCHEMA",
    "settings": "FILE|JSON",
    "setting_sources": "LIST",
    "mcp_config": "FILE|JSON",
    "agents": "JSON",
    "plugin_dir": "DIR",
    "rewind_files": "UUID",
    "rewind_to": "UUID",
}
_KINDS = {"int": "N", "float": "USD", "path": "FILE", "dir": "DIR", "str": "VALUE"}
CLIENT_FLAGS = (  # in an order that fills two lines
    "--input-format",
    "--include-partial-messages",
    "--include-hook-events",
    "--permission-prompt-tool",
    "--replay-user-messages",
    "--thinking-display",
)
COMMANDS = (
    ("doctor", "check the setup: credentials, API, sandbox, settings, skills, MCP"),
    ("config list|get|set …", "read and change settings"),
    ("mcp add|list|get|remove", "manage MCP servers"),
    ("plugin install|list …", "manage plugins and marketplaces"),
    ("skills [--json]", "the skills, commands and subagent types found here"),
    ("eval [SUITE] [--record]", "replay (or record) evaluation cases"),
    ("update [--check]", "whether a newer release is out, and how to update"),
    ("acp", "be the agent of an editor (the Agent Client Protocol)"),
)
ENVIRONMENT = (
    ("ANTHROPIC_API_KEY", "your API key (ANTHROPIC_AUTH_TOKEN for a gateway's bearer token)"),
    ("ANTHROPIC_BASE_URL", "another endpoint (a gateway or proxy)"),
    ("CLAUDE_CODE_USE_BEDROCK=1", "Amazon Bedrock (CLAUDE_CODE_USE_VERTEX=1: Google Vertex)"),
)
EXAMPLES = (('git diff | piton -p "review"', "answer once, for scripts (piped input is context)"),)


def help_text(width: int | None = None) -> str:
    width = min(_WIDTH, width or shutil.get_terminal_size((_WIDTH, 24)).columns)
    lines = [
        "Usage: piton [options] [prompt]",
        "       piton <command> …",
        "       piton --help | --version",
        "",
    ]
    about = "Piton: a coding assistant for your terminal. The manual: docs/ in Piton's checkout."
    lines += textwrap.wrap(about, width)
    groups: dict[str, list[Flag]] = {}
    for flag in FLAGS:
        if flag.names[0] not in CLIENT_FLAGS:
            groups.setdefault(flag.group, []).append(flag)
    for group, flags in groups.items():
        lines.append(f"{group}:")
        lines += [row(_names(flag), flag.help, width) for flag in flags]
    lines.append(row("(SDK clients)", ", ".join(CLIENT_FLAGS), width))
    for title, rows in (("Commands", COMMANDS), ("Environment", ENVIRONMENT), ("Examples", EXAMPLES)):
        lines.append(f"{title}:")
        lines += [row(f"piton {name}" if title == "Commands" else name, text, width) for name, text in rows]
    return "\n".join(lines) + "\n"


def _names(flag: Flag) -> str:
    # a short name and its long one; else the first long name (an alias such as --allowed-tools is
    # for those who type it, not worth a line)
    names = ", ".join(flag.names[:2]) if not flag.names[0].startswith("--") else flag.names[0]
    if flag.takes is None:
        return names
    return f"{names} {_VALUE.get(flag.dest) or _choices(flag) or _KINDS[flag.takes]}"


def _choices(flag: Flag) -> str:
    joined = "|".join(flag.choices)
    return joined if joined and len(joined) <= 20 else ("MODE" if flag.choices else "")


def row(names: str, text: str, width: int) -> str:
    """`names` in the first column and `text` wrapped beside it (under it, when the names are long),
    never cut: a word too long for the line goes whole onto a line of its own."""
    column = _NAMES if width >= _NARROW else 6
    indent = " " * column
    below = len(names) + 3 >= column  # no room for a gap: the text starts on the next line
    wrapper = textwrap.TextWrapper(
        width,
        initial_indent=indent if below else f"  {names}".ljust(column),
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join([f"  {names}"] * below + wrapper.wrap(text))
