"""The command line: flags named as `claude` names them, parsed by typer."""

from __future__ import annotations

import re
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from piton import __version__

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class InputFormat(StrEnum):
    text = "text"
    stream_json = "stream-json"


class Thinking(StrEnum):
    on = "on"
    off = "off"
    adaptive = "adaptive"  # Claude Code's names, as the Agent SDK passes them
    disabled = "disabled"


class Effort(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"
    xhigh = "xhigh"
    max = "max"


class PermissionMode(StrEnum):
    default = "default"
    acceptEdits = "acceptEdits"
    plan = "plan"
    bypassPermissions = "bypassPermissions"
    dontAsk = "dontAsk"
    auto = "auto"


class SandboxMode(StrEnum):
    read_only = "read-only"
    workspace_write = "workspace-write"
    danger_full_access = "danger-full-access"


def split_rules(values: list[str] | None) -> list[str]:
    """Rules given as repeated flags, or several in one value separated by commas or spaces (outside
    parentheses, so `Bash(git diff:*)` stays whole)."""
    rules: list[str] = []
    for value in values or []:
        current, depth = "", 0
        for ch in value:
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and (ch == "," or ch.isspace()):
                if current.strip():
                    rules.append(current.strip())
                current = ""
            else:
                current += ch
        if current.strip():
            rules.append(current.strip())
    return rules


# Options that, as in Claude Code, take several values after one flag (`--allowedTools Read Edit`).
# What follows is taken as another value only while it looks like a tool rule, so a prompt after
# the list stays the prompt.
LIST_OPTIONS = ("--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools", "--tools")
_RULE = re.compile(r"(mcp__[\w*-]+|[A-Z]\w*)(\(.*\))?")


def expand_lists(args: list[str]) -> list[str]:
    """`--allowedTools Read Edit` as `--allowedTools Read --allowedTools Edit`, and `-r` without an
    id as `--resume=`, for the parser (whose options take one value each, and always one)."""
    out: list[str] = []
    listing: str | None = None  # the list option whose values may go on
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            return [*out, arg, *args[index:]]
        if arg in ("-r", "--resume") and (index == len(args) or args[index].startswith("-")):
            out.append(f"{arg}=" if arg.startswith("--") else "--resume=")  # no id: choose one
            continue
        if listing is not None and _looks_like_rules(arg):
            out += [listing, arg]
            continue
        listing = None
        out.append(arg)
        name, equals, _ = arg.partition("=")
        if equals and name in LIST_OPTIONS:
            listing = name
        elif arg in LIST_OPTIONS and index < len(args):
            out.append(args[index])  # its first value, whatever it holds ("" for no tools)
            index += 1
            listing = arg
    return out


def _looks_like_rules(arg: str) -> bool:
    rules = split_rules([arg])
    return bool(rules) and all(_RULE.fullmatch(rule) for rule in rules)


def _version(value: bool) -> None:
    if value:
        print(f"piton {__version__}")
        raise typer.Exit()


@app.command()
def piton(
    prompt: Annotated[
        str | None, typer.Argument(help="The prompt. With -p and no prompt, it is read from stdin.")
    ] = None,
    print_mode: Annotated[
        bool, typer.Option("-p", "--print", help="Answer once and exit (for scripts and CI).")
    ] = False,
    output_format: Annotated[
        OutputFormat, typer.Option("--output-format", help="With -p: text, json (one result) or stream-json.")
    ] = OutputFormat.text,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Show progress on stderr and full error traces.")
    ] = False,
    model: Annotated[
        str | None, typer.Option("--model", help="Model alias (sonnet, opus, haiku) or full model id.")
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider",
            help="Where --model runs: anthropic (default), openai, ollama, lmstudio, vllm or llamacpp.",
        ),
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Stop after this many model turns.")
    ] = None,
    system_prompt: Annotated[
        str | None, typer.Option("--system-prompt", help='Replaces the system prompt ("" for none).')
    ] = None,
    system_prompt_file: Annotated[
        Path | None,
        typer.Option("--system-prompt-file", help="Replaces the system prompt with a file's text."),
    ] = None,
    append_system_prompt: Annotated[
        str | None, typer.Option("--append-system-prompt", help="Text appended to the system prompt.")
    ] = None,
    input_format: Annotated[
        InputFormat,
        typer.Option(
            "--input-format", help="With -p: text, or stream-json (messages and control requests on stdin)."
        ),
    ] = InputFormat.text,
    include_hook_events: Annotated[
        bool,
        typer.Option(
            "--include-hook-events", help="stream-json: a hook_response line for each hook that ran."
        ),
    ] = False,
    include_partial_messages: Annotated[
        bool,
        typer.Option("--include-partial-messages", help="stream-json: also the API's raw stream events."),
    ] = False,
    replay_user_messages: Annotated[
        bool, typer.Option("--replay-user-messages", help="stream-json input: echo user messages on stdout.")
    ] = False,
    permission_prompt_tool: Annotated[
        str | None,
        typer.Option(
            "--permission-prompt-tool", help='Who answers permission questions ("stdio": the client).'
        ),
    ] = None,
    tools: Annotated[
        list[str] | None,
        typer.Option(
            "--tools", help='The built-in tools offered: "Read,Edit", "" for none, "default" for all.'
        ),
    ] = None,
    setting_sources: Annotated[
        str | None, typer.Option("--setting-sources", help="Settings files that count: user,project,local.")
    ] = None,
    settings: Annotated[
        str | None, typer.Option("--settings", help="One more settings layer: a JSON file or inline JSON.")
    ] = None,
    session_id: Annotated[
        str | None, typer.Option("--session-id", help="The id (a UUID) of the new session.")
    ] = None,
    fork_session: Annotated[
        bool, typer.Option("--fork-session", help="With --resume/--continue: go on in a new session.")
    ] = False,
    max_budget_usd: Annotated[
        float | None, typer.Option("--max-budget-usd", min=0, help="Stop once the run has cost more (USD).")
    ] = None,
    max_budget_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-budget-tokens", min=1, help="Stop once the run has used more tokens (all kinds)."
        ),
    ] = None,
    fallback_model: Annotated[
        str | None, typer.Option("--fallback-model", help="Model for when the main one is overloaded.")
    ] = None,
    dangerously_skip_permissions: Annotated[
        bool,
        typer.Option(
            "--dangerously-skip-permissions", help="The same as --permission-mode bypassPermissions."
        ),
    ] = False,
    json_schema: Annotated[
        str | None, typer.Option("--json-schema", help="A JSON schema for the final answer.")
    ] = None,
    effort: Annotated[
        Effort | None,
        typer.Option("--effort", help="low, medium, high, xhigh or max (for models that take it)."),
    ] = None,
    agents: Annotated[
        str | None,
        typer.Option("--agents", help='Subagent types as JSON: {"name": {"description", "prompt"}}.'),
    ] = None,
    plugin_dir: Annotated[
        list[str] | None, typer.Option("--plugin-dir", help="Load the plugin in this folder (repeatable).")
    ] = None,
    max_thinking_tokens: Annotated[
        int | None, typer.Option("--max-thinking-tokens", min=0, help="Thinking budget in tokens (0: off).")
    ] = None,
    mcp_config: Annotated[list[str] | None, typer.Option("--mcp-config", help="MCP servers (JSON).")] = None,
    strict_mcp_config: Annotated[
        bool, typer.Option("--strict-mcp-config", help="Only the MCP servers of --mcp-config.")
    ] = False,
    continue_latest: Annotated[
        bool, typer.Option("-c", "--continue", help="Continue the latest session in this directory.")
    ] = False,
    resume: Annotated[
        str | None,
        typer.Option(
            "-r",
            "--resume",
            help="Resume the session with this id (without one: choose in the REPL).",
        ),
    ] = None,
    rewind_files: Annotated[
        str | None,
        typer.Option(
            "--rewind-files",
            help="With --resume: restore the files the tools changed from this checkpoint (a user "
            "message's uuid) on, and exit.",
        ),
    ] = None,
    rewind_to: Annotated[
        str | None,
        typer.Option(
            "--rewind-to",
            help="With --resume: as --rewind-files, and take the conversation back to before it too.",
        ),
    ] = None,
    thinking: Annotated[
        Thinking | None,
        typer.Option("--thinking", help="Extended thinking: on (adaptive) or off (disabled); default on."),
    ] = None,
    permission_mode: Annotated[
        PermissionMode | None,
        typer.Option(
            "--permission-mode",
            help="default, acceptEdits, plan (read-only tools), bypassPermissions, dontAsk (deny what "
            "the rules do not allow) or auto.",
        ),
    ] = None,
    allowed_tools: Annotated[
        list[str] | None,
        typer.Option(
            "--allowedTools", "--allowed-tools", help='Rules to allow without asking: "Bash(npm test:*)" Edit'
        ),
    ] = None,
    disallowed_tools: Annotated[
        list[str] | None,
        typer.Option("--disallowedTools", "--disallowed-tools", help='Rules to deny: "Bash(git push:*)"'),
    ] = None,
    sandbox: Annotated[
        SandboxMode | None,
        typer.Option(
            "--sandbox", help="read-only, workspace-write (default) or danger-full-access (no sandbox)."
        ),
    ] = None,
    add_dir: Annotated[
        list[Path] | None,
        typer.Option(  # a missing one is a usage error here; one from a settings file is skipped instead
            "--add-dir",
            exists=True,
            file_okay=False,
            help="Another directory the tools may use (repeatable).",
        ),
    ] = None,
    trust_workspace: Annotated[
        bool,
        typer.Option(
            "--trust-workspace",
            "--trust",
            help="Trust this folder for this run: its settings' allow rules and its skills' allowed-tools "
            "take effect (for CI; the REPL asks and remembers instead).",
        ),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", "-v", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Piton: a coding assistant for your terminal."""
    from piton.core.options import RunOptions
    from piton.core.project.claude_home import machine_is_sandbox

    if system_prompt is not None and system_prompt_file is not None:
        _fail("use --system-prompt or --system-prompt-file, not both")
    if system_prompt_file is not None:
        system_prompt = _read_text(system_prompt_file)
    if dangerously_skip_permissions:
        permission_mode = PermissionMode.bypassPermissions
    _tell_unsupported(json_schema)
    from piton.core.models import with_provider

    try:
        model = with_provider(provider, model)
    except ValueError as e:
        _fail(str(e))
    options = RunOptions(
        cwd=Path.cwd(),
        model=model,
        thinking=_thinking(thinking, max_thinking_tokens),
        max_turns=max_turns,
        system_prompt=system_prompt,
        append_system_prompt=append_system_prompt,
        continue_latest=continue_latest,
        resume=resume or None,
        permission_mode=permission_mode.value if permission_mode else None,
        allowed_tools=split_rules(allowed_tools),
        disallowed_tools=split_rules(disallowed_tools),
        sandbox=sandbox.value if sandbox else None,
        add_dirs=[d.expanduser().resolve() for d in add_dir or []],
        trust_workspace=trust_workspace,
        permission_prompt_tool=permission_prompt_tool,
        tools=None if tools is None else split_rules(tools),
        setting_sources=None if setting_sources is None else _sources(setting_sources),
        settings=settings,
        session_id=session_id,
        fork_session=fork_session,
        max_budget_usd=max_budget_usd,
        max_budget_tokens=max_budget_tokens,
        fallback_model=fallback_model,
        agents=agents,
        machine_is_sandbox=machine_is_sandbox(),
        effort=effort.value if effort is not None else None,
        mcp_config=list(mcp_config or []),
        strict_mcp_config=strict_mcp_config,
        plugin_dirs=[Path(d).expanduser().resolve() for d in plugin_dir or []],
    )
    if rewind_files or rewind_to:
        if not (resume or continue_latest):
            _fail("--rewind-files and --rewind-to need --resume ID (or --continue)")
        if prompt is not None:
            _fail("--rewind-files and --rewind-to are a step of their own: pass no prompt")
        from piton.cli.rewind_files import run_rewind

        checkpoint = rewind_to or rewind_files
        assert checkpoint is not None
        raise typer.Exit(run_rewind(options, checkpoint, conversation=rewind_to is not None))
    # a client speaking stream-json (the Agent SDK passes no -p) is never a terminal session
    if not print_mode and input_format is InputFormat.text:
        from piton.cli.repl import run_repl

        if resume == "" and prompt is None:  # `-r` alone: choose the session, as /resume does
            prompt = "/resume"
        raise typer.Exit(run_repl(options, verbose=verbose, initial_prompt=prompt))
    if resume == "":
        _fail("--resume needs a session id with -p (--continue takes the latest; the REPL lets you choose)")
    from piton.cli.headless import HeadlessOptions, run_headless

    headless = HeadlessOptions(
        options,
        prompt,
        output_format.value,
        verbose,
        input_format=input_format.value,
        include_partial_messages=include_partial_messages,
        include_hook_events=include_hook_events,
        replay_user_messages=replay_user_messages,
    )
    raise typer.Exit(run_headless(headless))


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"piton: {message}\n")
    raise typer.Exit(1)


def _read_text(path: Path) -> str:
    try:
        return path.expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        _fail(f"--system-prompt-file {path}: {getattr(e, 'strerror', None) or e}")


def _sources(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if unknown := [n for n in names if n not in ("user", "project", "local")]:
        _fail(f"--setting-sources: unknown source {', '.join(unknown)} (user, project, local)")
    return names


def _thinking(choice: Thinking | None, budget: int | None) -> bool | None:
    if choice is not None:
        return choice in (Thinking.on, Thinking.adaptive)
    if budget is None:
        return None
    if budget > 0:
        _note(
            "--max-thinking-tokens: a set budget is not supported yet; thinking is on with Piton's own budget"
        )
    return budget > 0


def _tell_unsupported(json_schema: str | None) -> None:
    """Claude Code's flags that Piton accepts and cannot honour yet: said, one line each, so that a
    client passing them runs on and its user knows what did not apply."""
    if json_schema:
        _note("--json-schema is not supported yet: the answer is not checked against the schema")


def _note(text: str) -> None:
    sys.stderr.write(f"piton: {text}\n")
