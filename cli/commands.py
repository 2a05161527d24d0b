"""Slash commands in the REPL: the table, and /help, /clear, /compact, /resume, /skills, /agents,
/memory, /mcp, /plugin and /exit (reports on the session are `info_commands`'; others have modules of
their own). Skills and custom commands register through the same table (a built-in keeps its name);
the MCP servers' prompts (`/mcp__<server>__<prompt>`) come and go with their servers, so they are
asked for each time."""

from __future__ import annotations

import difflib
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from piton.cli.info_commands import config, context, cost, doctor, model, permissions, status, trust
from piton.core.clip import one_line
from piton.core.display import counted
from piton.core.records import record

if TYPE_CHECKING:
    from piton.cli.controller import Controller

Handler = Callable[["Commands", str], Awaitable[None]]


@record(frozen=True)
class Command:
    name: str
    summary: str
    handler: Handler
    usage: str = ""


class Commands:
    """The table of slash commands, and what they act on: the terminal session, through `ui`."""

    def __init__(self, ui: Controller) -> None:
        self.ui = ui
        self.table: dict[str, Command] = {}
        for command in BUILTIN:
            self.register(command)
        catalog = ui.runtime.catalog if ui.runtime is not None else None
        for skill in catalog.for_user() if catalog is not None else []:
            if skill.name not in self.table:  # a built-in command keeps its name
                summary = f"{one_line(skill.description, 80)} ({skill.kind}, {skill.source})"
                self.register(Command(skill.name, summary, _invoke, skill.argument_hint or ""))

    def register(self, command: Command) -> None:
        self.table[command.name] = command

    def names(self) -> list[tuple[str, str]]:
        return [(c.name, c.summary) for c in self.table.values()] + [
            (name, summary) for name, summary, _ in self._prompts()
        ]

    def _prompts(self) -> list[tuple[str, str, str]]:
        from piton.mcp_turn import prompt_commands

        runtime = self.ui.runtime
        return prompt_commands(runtime.mcp if runtime is not None else None)

    async def run(self, line: str) -> None:
        name, _, args = line[1:].partition(" ")
        if name.startswith("mcp__"):  # an MCP prompt: the turn fetches it, or says it is unknown
            await _invoke(self, line)
            return
        command = self.table.get(name) or self.table.get(_ALIASES.get(name, ""))
        catalog = self.ui.runtime.catalog if self.ui.runtime is not None else None
        if command is None and catalog is not None and catalog.typed(line) is not None:
            await _invoke(self, line)  # `/scan` or `/tools scan` for `/tools:scan`
            return
        if command is None and catalog is not None and catalog.unknown(line) is None:
            self.ui.send(line)  # a path such as `/usr/bin/env …` is a prompt, not a command
            return
        if command is None:
            close = difflib.get_close_matches(name, list(self.table), n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join('/' + c for c in close)}?" if close else " /help lists them."
            self.ui.print_line(f"Unknown command /{name}.{hint}", "yellow")
            return
        await command.handler(self, line if command.handler is _invoke else args.strip())

    @property
    def console(self) -> Console:
        return self.ui.console

    def say(self, text: str, style: str = "") -> None:
        self.ui.print_line(text, style)


async def _help(c: Commands, _: str) -> None:
    table = Table(show_header=False, box=None, padding=(0, 2))
    # Text, not markup: `[instructions]` is an argument hint, not a style
    for command in c.table.values():
        table.add_row(Text(f"/{command.name} {command.usage}".strip()), Text(command.summary))
    for name, summary, usage in c._prompts():
        table.add_row(Text(f"/{name} {usage}".strip()), Text(summary))
    console = c.console
    console.print(table)
    console.print(
        Text(
            "Enter sends · Alt+Enter, Ctrl-J or a trailing \\ adds a line · @path attaches a file · "
            "!cmd runs a shell command · Esc or Ctrl-C interrupts · Esc Esc rewinds · "
            "Shift+Tab changes the permission mode · "
            "Ctrl-O opens the transcript (thinking and results in full) · Ctrl-R searches history · "
            "Ctrl-D or Ctrl-C twice exits",
            style="dim",
        )
    )


async def _clear(c: Commands, _: str) -> None:
    runtime = await c.ui.switch(resume=None)
    c.say(f"(a new session: {runtime.log.session_id})", "dim")


async def _compact(c: Commands, args: str) -> None:
    runtime = await c.ui.ready()
    if not runtime.agent.history:
        c.say("Nothing to compact yet.", "dim")
        return
    if c.ui.busy:
        c.say("Piton is working; /compact once this turn ends (Esc stops it).", "yellow")
        return
    await c.ui.work(
        runtime.agent.compact(instructions=args or None),
        interrupted="  ⎿  Compaction interrupted; the conversation is as it was.",
    )


async def _resume(c: Commands, args: str) -> None:
    runtime = await c.ui.ready()
    from piton.core.conversation.session import SessionStore

    choice = args
    if not choice:
        sessions = [
            s for s in SessionStore().recent(c.ui.options.cwd) if s.session_id != runtime.log.session_id
        ]
        if not sessions:
            c.say("No other sessions in this directory.", "dim")
            return
        for number, s in enumerate(sessions[:10], start=1):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.modified))
            c.say(f"  {number:>2}. {when}  {s.messages:>3} messages  {one_line(s.first_prompt, 70)}")
        answer = (await c.ui.ask("Resume which? (number, or Enter to cancel) › ")).strip()
        if not answer.isdigit() or not 1 <= int(answer) <= len(sessions[:10]):
            return
        choice = sessions[int(answer) - 1].session_id
    resumed = await c.ui.switch(resume=choice)
    from piton.cli.welcome import recap_lines

    # the recap names the session the conversation now lives in (a session in use elsewhere goes on
    # in a fork); without exchanges to recap, this line does
    if not recap_lines(resumed.agent.history):
        messages = counted(len(resumed.agent.history), "message")
        c.say(f"(resumed session {resumed.log.session_id}: {messages})", "dim")


async def _invoke(c: Commands, line: str) -> None:
    """A skill or custom command: it runs as a turn (queued if one is under way)."""
    c.ui.send(line)


async def _skills(c: Commands, _: str) -> None:
    runtime = await c.ui.ready()
    from piton.skills.report import report

    if runtime.catalog is None:
        c.say("No skills were loaded.", "dim")
        return
    warnings = [n for n in runtime.notices if n.endswith("; skipped")]
    for text, style in report(runtime.catalog, runtime.agent_types, warnings, reserved=set(BUILTIN_NAMES)):
        c.say(text, style)


async def _agents(c: Commands, args: str) -> None:
    runtime = await c.ui.ready()
    from pathlib import Path

    from piton.cli.agents_view import agents_command
    from piton.skills.report import agent_lines

    if await agents_command(runtime.agent.context.agents, args, c.say):
        return

    known = {tool.name for tool in runtime.agent.tools}
    for text, style in agent_lines(runtime.agent_types, Path.home(), known):
        c.say(text, style)


async def _workflows(c: Commands, args: str) -> None:
    runtime = await c.ui.ready()
    from piton.cli.agents_view import workflows_command

    await workflows_command(runtime, args, c.say, c.ui.ask)


async def _workflow(c: Commands, args: str) -> None:
    await _workflows(c, f"run {args}")


async def _loop(c: Commands, args: str) -> None:
    runtime = await c.ui.ready()
    from piton.cli.loop_view import loop_command

    loop_command(runtime.agent.context.schedule, args, c.say)


async def _memory(c: Commands, args: str) -> None:
    runtime = await c.ui.ready()
    if args.split()[:1] == ["edit"]:
        from piton.cli.memory_edit import edit_memory

        await edit_memory(c.ui, runtime, args.split(maxsplit=1)[1] if len(args.split()) > 1 else "")
        return
    memory = runtime.memory
    if memory is None or not memory.files:
        c.say(
            "No instruction files were loaded (AGENTS.md, CLAUDE.md, CLAUDE.local.md from the git root "
            "down to here, ~/.piton/AGENTS.md). /init drafts an AGENTS.md.",
            "dim",
        )
    else:
        for file in memory.files:
            c.say(f"{file.path}  ({file.scope}, {len(file.text):,} characters)")
            for imported in file.imports:
                c.say(f"    imports {imported}", "dim")
        for warning in memory.warnings:
            c.say(warning, "yellow")
    from piton.cli.memory_edit import memory_folder_of

    folder = memory_folder_of(runtime)
    if folder is not None:
        notes = (
            sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
            if folder.is_dir()
            else []
        )
        c.say(
            f"The model's memory (/memories): {folder}  ({len(notes)} file{'s' if len(notes) != 1 else ''})"
        )
        for note in notes[:50]:
            c.say(f"    {note.relative_to(folder)}  ({note.stat().st_size:,} bytes)", "dim")
        if notes:
            c.say("Edit or delete these files as you like; the model reads them with its memory tool.", "dim")


async def _mcp(c: Commands, _: str) -> None:
    runtime = await c.ui.ready()
    from piton.cli.mcp_command import status_lines

    for text, style in status_lines(runtime.mcp.states() if runtime.mcp is not None else []):
        c.say(text, style)


async def _plugin(c: Commands, _: str) -> None:
    runtime = await c.ui.ready()
    from piton.skills.plugins import summary

    plugins = runtime.plugins
    skills = list(runtime.catalog.skills.values()) if runtime.catalog is not None else []
    for line in summary(plugins, skills) if plugins is not None else []:
        c.say(line)
    if plugins is None or not plugins.plugins:
        c.say("No plugins loaded.", "dim")
    for blocked in plugins.blocked if plugins is not None else []:
        c.say(f"{blocked}: enabled by this project's settings; loads once you trust the folder", "yellow")
    c.say(
        "Install: piton plugin install <path|git-url|name@marketplace> (piton plugin marketplace add "
        "<path|git-url|owner/repo> first); piton plugin list|enable|disable|uninstall; --plugin-dir PATH",
        "dim",
    )


async def _rewind(c: Commands, _: str) -> None:
    from piton.cli.rewind_command import rewind_command

    await rewind_command(c.ui)


async def _add_dir(c: Commands, args: str) -> None:
    from piton.cli.session_commands import add_dir

    await add_dir(c.ui, args)


async def _export(c: Commands, args: str) -> None:
    from piton.cli.session_commands import export

    await export(c.ui, args)


async def _output_style(c: Commands, args: str) -> None:
    from piton.cli.style_command import output_style

    await output_style(c.ui, args)


async def _bashes(c: Commands, args: str) -> None:
    from piton.cli.bashes_command import bashes

    await bashes(c.ui, args)


async def _vim(c: Commands, args: str) -> None:
    from piton.cli.session_commands import vim

    await vim(c.ui, args)


async def _exit(c: Commands, _: str) -> None:
    c.ui.exit()


BUILTIN = (
    Command("help", "list the commands and keys", _help),
    Command("clear", "start a new session", _clear),
    Command("compact", "summarise the conversation to free the context window", _compact, "[instructions]"),
    Command("context", "what fills the context window", context),
    Command("cost", "tokens, dollars and tool statistics of this session (also /stats)", cost),
    Command("model", "show or change the model", model, "[id]"),
    Command("resume", "continue an earlier session of this directory", _resume, "[id]"),
    Command("rewind", "go back to before an earlier message: code, conversation or both (Esc Esc)", _rewind),
    Command(
        "permissions", "show the permission mode and rules, or add one", permissions, "[allow|ask|deny rule]"
    ),
    Command("skills", "the skills, custom commands and subagent types found", _skills),
    Command("agents", "the session's agents (stop them) and the subagent types", _agents, "[stop ID|all]"),
    Command(
        "memory",
        "the instruction files loaded (AGENTS.md, CLAUDE.md) and the model's memory folder",
        _memory,
        "[edit file]",
    ),
    Command("plugin", "the plugins loaded, what each added, and how to install more", _plugin),
    Command("status", "version, session, model, sandbox, API", status),
    Command("trust", "whether this folder is trusted; forget the answer", trust, "[forget]"),
    Command("doctor", "check the setup: credentials, API, sandbox, settings, skills, MCP", doctor),
    Command("config", "show the settings, or change one (as piton config does)", config, "[list|get|set …]"),
    Command("mcp", "the MCP servers, their status and tools", _mcp),
    Command("add-dir", "another folder the tools may read and write, for this session", _add_dir, "<path>"),
    Command("export", "the conversation as a Markdown file", _export, "[file]"),
    Command(
        "output-style",
        "how the model answers: Default, Explanatory, Learning, your own…",
        _output_style,
        "[name]",
    ),
    Command("bashes", "the background shells: status, output, and stopping them", _bashes, "[show|kill ID]"),
    Command(
        "loop",
        "repeat a task on an interval (/loop 5m …) or self-paced; /loop stop",
        _loop,
        "[interval] task",
    ),
    Command("vim", "vi keys in the prompt (on or off)", _vim),
    Command("exit", "leave Piton", _exit),
)
BUILTIN_NAMES = tuple(c.name for c in BUILTIN)
_ALIASES = {"quit": "exit", "q": "exit", "new": "clear", "reset": "clear", "stats": "cost"}
