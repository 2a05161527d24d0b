"""Slash commands that report on the session: /context (what fills the window), /cost (tokens, dollars
and tool statistics), /model, /status and /permissions."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from piton import __version__
from piton.core.context.meter import report
from piton.core.models import ALIASES, model_info, resolve_alias
from piton.core.project.settings import load_settings, settings_files
from piton.core.safety.permissions import Rule

if TYPE_CHECKING:
    from piton.cli.controller import CommandContext


def _bar(used: int, limit: int, window: int, width: int = 40) -> Text:
    """The window as a bar: used, free before compaction starts, and the part kept for the reply."""
    filled = min(width, round(used / window * width))
    before_limit = max(0, round(limit / window * width) - filled)
    bar = Text("█" * filled, style="cyan") + Text("░" * before_limit, style="dim")
    return bar + Text("▒" * max(0, width - filled - before_limit), style="yellow")


async def context(c: CommandContext, _: str) -> None:
    runtime = await c.ui.ready()
    agent = runtime.agent
    r = report(
        agent.meter,
        agent.config.system_prompt,
        agent.offered_tools()[0],  # what a request carries: deferred tools only once loaded
        agent.history,
        window=agent.context_window(),
        limit=agent.context_limit(),
        skills=agent.config.skills_listing,
    )
    console = c.console
    console.print(
        Text(f"Context: {r.used:,} of {r.window:,} tokens ({r.used / r.window:.1%})  ", style="bold")
        + _bar(r.used, r.limit, r.window)
    )
    table = Table(box=None, padding=(0, 2))
    table.add_column("part")
    table.add_column("tokens (estimate)", justify="right")
    for part, tokens in (
        ("system prompt", r.system),
        ("tool definitions", r.tools),
        ("skills listing", r.skills),
        ("messages", r.messages),
        ("tool results", r.tool_results),
    ):
        table.add_row(part, f"{tokens:,}")
    console.print(table)
    compactor = agent.compactor
    if compactor is not None and not compactor.settings.enabled:
        c.say("Automatic compaction is off (autoCompact: false); /compact runs it.", "dim")
    else:
        left = max(0, r.limit - r.used)
        c.say(f"Compaction starts at {r.limit:,} tokens ({left:,} from now).", "dim")


async def cost(c: CommandContext, _: str) -> None:
    totals = c.ui.totals
    if not totals.by_model:
        c.say("No requests yet in this session.", "dim")
        return
    table = Table(box=None, padding=(0, 2))
    for column in ("model", "input", "cache read", "cache write", "output", "cache hits", "cost"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for model, usage in totals.by_model.items():
        prompt = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        hits = usage.cache_read_input_tokens / prompt if prompt else 0.0
        table.add_row(
            model,
            f"{usage.input_tokens:,}",
            f"{usage.cache_read_input_tokens:,}",
            f"{usage.cache_creation_input_tokens:,}",
            f"{usage.output_tokens:,}",
            f"{hits:.0%}",
            f"${usage.cost_usd(model):.4f}",
        )
    console = c.console
    console.print(table)
    c.say(f"Total: ${totals.cost_usd:.4f}", "bold")
    if c.ui.runtime is None:
        return
    metrics = c.ui.runtime.agent.metrics.to_dict()
    if metrics["tools"]:
        tools = Table(box=None, padding=(0, 2))
        for column in ("tool", "calls", "avg time", "errors", "denied"):
            tools.add_column(column, justify="left" if column == "tool" else "right")
        for name, m in sorted(metrics["tools"].items(), key=lambda item: -item[1]["calls"]):
            row = (f"{m['avg_duration_ms']:,} ms", f"{m['error_rate']:.0%}", str(m["denied"]))
            tools.add_row(name, str(m["calls"]), *row)
        console.print(tools)
    c.say(f"Compactions: {metrics['compactions']} · skill activations: {metrics['skill_activations']}", "dim")


async def model(c: CommandContext, args: str) -> None:
    runtime = await c.ui.ready()
    config = runtime.agent.config
    if args:
        config.model = resolve_alias(args)
        # a window set in the settings for this model (or for all) applies from the next request
        config.context_window, config.max_output_tokens = load_settings(c.ui.options.cwd).model_limits(
            config.model
        )
    info = model_info(config.model)
    known = "" if info.known else " (an id Piton does not know: safe defaults)"
    window = runtime.agent.context_window()
    c.say(
        f"Model: {info.id}{known} · window {window:,} tokens · thinking {info.thinking}",
        "bold" if args else "",
    )
    if not args:  # what there is to choose from
        for alias, full in ALIASES.items():
            price = model_info(full).prices
            mark = "●" if full == info.id else " "
            c.say(f"  {mark} {alias:<7} {full} · ${price.input:g}/${price.output:g} per MTok in/out", "dim")
        c.say("  /model NAME switches (an alias or any model id); --model picks one at start.", "dim")


async def permissions(c: CommandContext, args: str) -> None:
    runtime = await c.ui.ready()
    gate = runtime.agent.gate
    assert gate is not None
    verb, _, rule = args.partition(" ")
    if verb in ("allow", "ask", "deny") and rule:
        try:
            getattr(gate.permissions, verb).append(Rule.parse(rule))
        except ValueError as e:
            c.say(str(e), "red")
            return
        c.say(f"{verb}: {rule} (for this session)", "dim")
        return
    permissions = gate.permissions
    c.say(f"Mode: {permissions.mode} (Shift+Tab cycles default, acceptEdits, plan)", "bold")
    for behavior in ("allow", "ask", "deny"):
        rules = getattr(permissions, behavior)
        c.say(f"  {behavior}: {', '.join(map(str, rules)) or '(none)'}")
    c.say("Add one for this session with /permissions allow|ask|deny <rule>.", "dim")


async def status(c: CommandContext, _: str) -> None:
    runtime = await c.ui.ready()
    agent = runtime.agent
    policy = agent.context.policy
    from piton.core.safety.sandbox import make_sandbox

    if policy is None:
        sandbox_line = "Sandbox: none configured"
    else:
        sandbox = agent.context.sandbox or make_sandbox(policy)
        problem = sandbox.unavailable_reason()
        unavailable = f" (unavailable: {problem})" if problem else ""
        sandbox_line = f"Sandbox: {policy.mode} via {sandbox.describe()}{unavailable}"
    lines = [
        f"Piton {__version__}",
        f"Session: {runtime.log.session_id}",
        f"Directory: {c.ui.options.cwd}",
        f"Workspace trust: {runtime.trust.describe() if runtime.trust is not None else 'not checked'}",
        f"Model: {agent.config.model}",
        f"Permission mode: {agent.gate.permissions.mode if agent.gate else 'default'}",
        sandbox_line,
        f"API: {os.environ.get('ANTHROPIC_BASE_URL') or 'https://api.anthropic.com'}",
        "Settings: "
        + (", ".join(str(f.path) for f in settings_files(c.ui.options.cwd) if f.path.is_file()) or "(none)"),
    ]
    if runtime.hooks is not None:
        events = sorted({h.event for h in runtime.hooks.commands})
        lines.append(f"Hooks: {len(runtime.hooks.commands)} ({', '.join(events)})")
    if runtime.unsupported:
        lines.append("Settings not applied (Piton has no such setting): " + ", ".join(runtime.unsupported))
    for line in lines:
        c.say(line)


async def doctor(c: CommandContext, _: str) -> None:
    """`piton doctor` for the session's folder, shown in the REPL."""
    import asyncio
    import contextlib
    import io

    from piton.cli.doctor import doctor as check

    def run() -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            check(c.ui.options.cwd)
        return out.getvalue()

    for line in (await asyncio.to_thread(run)).splitlines():
        c.say(line)


async def config(c: CommandContext, argument: str) -> None:
    """`piton config …` in the REPL: `list` without arguments; changes apply from the next session."""
    import contextlib
    import io
    import shlex

    from piton.cli.config_command import main

    out = io.StringIO()
    try:
        words = shlex.split(argument) or ["list"]
        with contextlib.redirect_stderr(out):  # argparse says what is wrong there, then exits
            code = main(words, out, out)
    except ValueError as e:
        out.write(f"/config: {e}\n")
        code = 2
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 2
    for line in out.getvalue().splitlines():
        c.say(line, "" if code == 0 else "red")
    if code == 0 and words[0] in ("set", "add", "remove"):
        c.say("Saved; it applies from the next session.", "dim")


async def trust(c: CommandContext, argument: str) -> None:
    """Whether this folder is trusted and why; `/trust forget` drops the remembered answer, so the
    next start asks again."""
    runtime = await c.ui.ready()
    current = runtime.trust
    if current is None:
        c.say("Workspace trust was not checked in this session.", "dim")
        return
    if argument.strip() != "forget":
        c.say(f"Workspace trust: {current.describe()}")
        c.say("/trust forget drops your answer about this folder: the next start asks again.", "dim")
        return
    if current.store is not None and current.store.forget(current.folder):
        c.say(f"Forgotten: the next start in {current.folder} asks again. This session keeps its trust.")
    else:
        c.say(
            current.store.problem if current.store and current.store.problem else "No answer was remembered."
        )
