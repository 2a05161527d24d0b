"""Every option of the `piton` command, as data: its names, what it takes, its group in `--help`
and its help line. The parser (`cli/app.py`) is built from this table, and so are the parse without
typer (`cli/command.py`) and the fast path's scan (`cli/main.py`), so they cannot drift apart. Kept
free of imports beyond the mode names: the fast path reads it before anything else is loaded."""

from __future__ import annotations

from piton.core.mode_names import CHOSEN_MODES, SANDBOX_MODES

SESSION, MODEL, SAFETY, OUTPUT, EXTENSIONS = (
    "Session",
    "Model",
    "Permissions and sandbox",
    "Output",
    "Extensions",
)


class Flag:
    """One option. `takes`: None for a switch, else the kind of its value (`str`, `int`, `float`,
    `path`, `dir`); `choices` the values it accepts (empty: any); `many`: it may be repeated."""

    __slots__ = ("choices", "dest", "group", "help", "many", "minimum", "names", "takes")

    def __init__(
        self,
        dest: str,
        *names: str,
        takes: str | None = "str",
        choices: tuple[str, ...] = (),
        group: str = SESSION,
        help: str = "",
        many: bool = False,
        minimum: float | None = None,
    ) -> None:
        self.dest, self.names, self.takes, self.choices = dest, names, takes, choices
        self.group, self.help, self.many, self.minimum = group, help, many, minimum


def _switch(dest: str, *names: str, group: str, help: str) -> Flag:
    return Flag(dest, *names, takes=None, group=group, help=help)


FLAGS: tuple[Flag, ...] = (
    # -- the session ---------------------------------------------------------------------------------
    _switch("print_mode", "-p", "--print", group=SESSION, help="Answer once and exit (for scripts and CI)."),
    _switch("continue_latest", "-c", "--continue", group=SESSION, help="Continue the latest session here."),
    Flag(
        "resume", "-r", "--resume", help="Resume the session with this id (without one: choose in the REPL)."
    ),
    Flag("session_id", "--session-id", help="The id (a UUID) of the new session."),
    _switch(
        "fork_session",
        "--fork-session",
        group=SESSION,
        help="With --resume/--continue: go on in a new session.",
    ),
    Flag("max_turns", "--max-turns", takes="int", minimum=1, help="Stop after this many model turns."),
    Flag(
        "max_budget_usd",
        "--max-budget-usd",
        takes="float",
        minimum=0,
        help="Stop once the run has cost more (USD).",
    ),
    Flag(
        "max_budget_tokens",
        "--max-budget-tokens",
        takes="int",
        minimum=1,
        help="Stop once the run has used more tokens.",
    ),
    Flag(
        "rewind_files",
        "--rewind-files",
        help="With --resume: put files back as they were at this message; exit.",
    ),
    Flag(
        "rewind_to",
        "--rewind-to",
        help="With --resume: as --rewind-files, and the conversation too.",
    ),
    # -- the model -----------------------------------------------------------------------------------
    Flag(
        "model",
        "--model",
        group=MODEL,
        help="Model alias (sonnet, opus, haiku) or id; else $ANTHROPIC_MODEL.",
    ),
    Flag(
        "provider",
        "--provider",
        group=MODEL,
        help="anthropic (default), openai, ollama, lmstudio, vllm or llamacpp.",
    ),
    Flag(
        "fallback_model", "--fallback-model", group=MODEL, help="Model for when the main one is overloaded."
    ),
    Flag(
        "thinking",
        "--thinking",
        choices=("on", "off", "adaptive", "disabled"),
        group=MODEL,
        help="Extended thinking: on (adaptive) or off (disabled); default on.",
    ),
    Flag(
        "max_thinking_tokens",
        "--max-thinking-tokens",
        takes="int",
        minimum=0,
        group=MODEL,
        help="Thinking budget in tokens (0: off).",
    ),
    Flag(
        "thinking_display",
        "--thinking-display",
        choices=("summarized", "omitted"),
        group=MODEL,
        help="How thinking comes back from the API: summarized or omitted.",
    ),
    Flag(
        "effort",
        "--effort",
        choices=("low", "medium", "high", "xhigh", "max"),
        group=MODEL,
        help="low, medium, high, xhigh or max (for models that take it).",
    ),
    Flag(
        "system_prompt",
        "--system-prompt",
        group=MODEL,
        help="Replaces Piton's instructions (memory files stay).",
    ),
    Flag(
        "system_prompt_file",
        "--system-prompt-file",
        takes="path",
        group=MODEL,
        help="Replaces the system prompt with a file's text.",
    ),
    Flag(
        "append_system_prompt",
        "--append-system-prompt",
        group=MODEL,
        help="Text appended to the system prompt.",
    ),
    # -- permissions and the sandbox -----------------------------------------------------------------
    Flag(
        "permission_mode",
        "--permission-mode",
        choices=CHOSEN_MODES,
        group=SAFETY,
        help="default, acceptEdits, plan, bypassPermissions, dontAsk or auto.",
    ),
    _switch(
        "dangerously_skip_permissions",
        "--dangerously-skip-permissions",
        group=SAFETY,
        help="The same as --permission-mode bypassPermissions.",
    ),
    Flag(
        "allowed_tools",
        "--allowedTools",
        "--allowed-tools",
        many=True,
        group=SAFETY,
        help='Rules to allow without asking: "Bash(npm test:*)" Edit',
    ),
    Flag(
        "disallowed_tools",
        "--disallowedTools",
        "--disallowed-tools",
        many=True,
        group=SAFETY,
        help='Rules to deny: "Bash(git push:*)"',
    ),
    Flag(
        "tools",
        "--tools",
        many=True,
        group=SAFETY,
        help='The built-in tools offered: "Read,Edit", "" (none) or "default".',
    ),
    Flag(
        "sandbox",
        "--sandbox",
        choices=SANDBOX_MODES,
        group=SAFETY,
        help="read-only, workspace-write (default) or danger-full-access (none).",
    ),
    Flag(
        "add_dir",
        "--add-dir",
        takes="dir",
        many=True,
        group=SAFETY,
        help="Another directory the tools may use (repeatable).",
    ),
    _switch(
        "trust_workspace",
        "--trust-workspace",
        "--trust",
        group=SAFETY,
        help="Trust this folder for this run, as in CI (the REPL asks instead).",
    ),
    Flag(
        "permission_prompt_tool",
        "--permission-prompt-tool",
        group=SAFETY,
        help='Who answers permission questions ("stdio": the client).',
    ),
    # -- output, and programs that drive Piton -------------------------------------------------------
    Flag(
        "output_format",
        "--output-format",
        choices=("text", "json", "stream-json"),
        group=OUTPUT,
        help="With -p: text, json (one result) or stream-json.",
    ),
    Flag(
        "input_format",
        "--input-format",
        choices=("text", "stream-json"),
        group=OUTPUT,
        help="With -p: text, or stream-json (messages and control requests on stdin).",
    ),
    _switch("verbose", "--verbose", group=OUTPUT, help="Show progress on stderr and full error traces."),
    _switch(
        "include_partial_messages",
        "--include-partial-messages",
        group=OUTPUT,
        help="stream-json: also the API's raw stream events.",
    ),
    _switch(
        "include_hook_events",
        "--include-hook-events",
        group=OUTPUT,
        help="stream-json: a hook_response line for each hook that ran.",
    ),
    _switch(
        "replay_user_messages",
        "--replay-user-messages",
        group=OUTPUT,
        help="stream-json input: echo user messages on stdout.",
    ),
    Flag("json_schema", "--json-schema", group=OUTPUT, help="A JSON schema for the final answer."),
    # -- what extends a session ----------------------------------------------------------------------
    Flag(
        "settings",
        "--settings",
        group=EXTENSIONS,
        help="One more settings layer: a JSON file or inline JSON.",
    ),
    Flag(
        "setting_sources",
        "--setting-sources",
        group=EXTENSIONS,
        help="Settings files that count: user,project,local.",
    ),
    Flag("mcp_config", "--mcp-config", many=True, group=EXTENSIONS, help="MCP servers (JSON)."),
    _switch(
        "strict_mcp_config",
        "--strict-mcp-config",
        group=EXTENSIONS,
        help="Only the MCP servers of --mcp-config.",
    ),
    Flag(
        "agents",
        "--agents",
        group=EXTENSIONS,
        help='Subagent types as JSON: {"name": {"description", "prompt"}}.',
    ),
    Flag(
        "plugin_dir",
        "--plugin-dir",
        many=True,
        group=EXTENSIONS,
        help="Load the plugin in this folder (repeatable).",
    ),
)


def values_by_name() -> dict[str, tuple[str, ...] | None]:
    """Each option name: None for a switch, else the values it accepts (empty: any)."""
    return {name: None if flag.takes is None else flag.choices for flag in FLAGS for name in flag.names}
