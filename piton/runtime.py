"""The composition root: a ready session (`Runtime`) from what the user asked for — settings, model,
session log, tools, skills, subagent types, project memory, system prompt, sandbox policy,
workspace trust and permissions. The terminal, `-p` and the library API all start here; agents
themselves are built by `piton.factory`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from piton.core.activation_prep import ActivationPreparer
from piton.core.agent import Agent, AgentConfig
from piton.core.checkpoints import Checkpoints
from piton.core.context.compaction import CompactionSettings
from piton.core.context.result_store import FileResultStore
from piton.core.conversation.claude_transcript import Mirrored
from piton.core.conversation.messages import ContentBlock
from piton.core.conversation.session import SessionLog, SessionStore
from piton.core.listing import listing_budget, ranked
from piton.core.models import Prices, add_prices, model_info, resolve_alias
from piton.core.options import RunOptions
from piton.core.project.claude_home import claude_home
from piton.core.project.settings import (
    Settings,
)
from piton.core.project.system_prompt import OutputStyle, build_system_prompt, environment_section
from piton.core.project.trust import Grant, Trust, TrustStore, decide
from piton.core.providers import Provider
from piton.core.safety.permissions import (
    Approver,
    DenyAll,
    PermissionGate,
    Rule,
)
from piton.core.safety.policy import PolicyError, SandboxPolicy, real
from piton.core.safety.sandbox import Sandbox, make_sandbox
from piton.core.safety.sandbox.limits import configure as configure_limits
from piton.core.subagents import AgentType, SubagentRunner
from piton.core.tools import AnyTool, ToolContext, ToolResult
from piton.extensions import attribution, hook_commands, make_hooks, status_command
from piton.extensions import grants as extension_grants
from piton.factory import AgentFactory, subagent_directory
from piton.permission_setup import EXTRA_MODES as EXTRA_MODES
from piton.permission_setup import MACHINE_SANDBOX_NOTICE as MACHINE_SANDBOX_NOTICE
from piton.permission_setup import DontAsk, permissions_for, policy_for, rule_grant, valid_rules, where
from piton.session_setup import OpenedSession, claude_transcript, open_session
from piton.setup_errors import SetupError as SetupError
from piton.starting import apply_user_env
from piton.starting import run_settings as run_settings
from piton.starting import starting_model as starting_model

if TYPE_CHECKING:
    from piton.core.hooks.session import Hooks
    from piton.core.mcp.config import Found, Selection
    from piton.core.mcp.manager import McpManager
    from piton.core.mcp.sdk import SdkHost
    from piton.core.project.memory import Memory
    from piton.skills.catalog import Catalog, Skill
    from piton.skills.plugins import Plugins
    from piton.telemetry import SessionTelemetry, Telemetry


@dataclass(slots=True)
class Runtime:
    """A ready session: the agent, its log, what was found, and what the terminal may do beside
    the agent's turns."""

    agent: Agent
    log: SessionLog
    notices: list[str] = field(default_factory=list)
    catalog: Catalog | None = None  # skills and custom commands
    memory: Memory | None = None  # the AGENTS.md / CLAUDE.md files loaded
    agent_types: dict[str, AgentType] = field(default_factory=dict)
    trust: Trust | None = None  # what the folder's own files may grant
    mcp: McpManager | None = None  # the MCP servers, running beside the agent
    hooks: Hooks | None = None  # the settings' hooks (the CLI fires SessionStart and SessionEnd)
    status_command: str | None = None  # the settings' statusLine command
    unsupported: list[str] = field(default_factory=list)  # settings keys Piton does not apply
    plugins: Plugins | None = None  # the Claude Code plugins loaded, and what they added
    output_style: OutputStyle | None = None  # the style the model answers in
    output_styles: dict[str, OutputStyle] = field(default_factory=dict)  # all found, by lower-case name
    telemetry: SessionTelemetry | None = None  # OpenTelemetry, when turned on

    @property
    def style_name(self) -> str:
        """The output style's name as Claude Code reports it (`default` for Piton's own)."""
        style = self.output_style
        return "default" if style is None or not style.prompt else style.name

    async def start_hooks(self, source: str) -> None:
        """SessionStart hooks (`startup`, `resume`, `clear`): what they print is context for the
        model's next turn."""
        if self.hooks is not None and self.hooks.has("SessionStart"):
            for text in await self.hooks.session_start(source):
                self.agent.add_note(text)

    async def end_hooks(self, reason: str) -> None:
        """SessionEnd hooks (`clear`, `prompt_input_exit`, `other`…); they cannot stop anything."""
        if self.hooks is not None and self.hooks.has("SessionEnd"):
            await self.hooks.session_end(reason)

    def close(self) -> None:
        """Stop what runs beside the agent (the MCP servers and their processes, the background
        shells still running), and flush the telemetry. Idempotent."""
        self.agent.context.shells.close()
        if self.mcp is not None:
            self.mcp.close()
        if self.telemetry is not None:
            telemetry, self.telemetry = self.telemetry, None
            telemetry.close()

    async def run_shell(self, command: str) -> ToolResult:
        """A command the user typed (`!cmd`), run in the session's sandbox like the model's
        commands (no question: the user asked for it)."""
        from piton.builtin_tools.bash import Bash, BashInput

        return await Bash().run(BashInput(command=command), self.agent.context)

    def attach(self, prompt: str, warn: Callable[[str], None]) -> str | list[ContentBlock]:
        """The prompt with the files it mentions as `@path` attached."""
        from piton.builtin_tools.mentions import attach

        return attach(self.agent.context, prompt, warn)

    async def attach_resources(
        self, prompt: str, content: str | list[ContentBlock], warn: Callable[[str], None]
    ) -> str | list[ContentBlock]:
        """`content` with the MCP resources the prompt mentions as `@server:uri` attached."""
        from piton.builtin_tools.mentions import attach_resources

        return await attach_resources(self.mcp, prompt, content, warn)

    def project_files(self, limit: int = 20_000) -> list[str]:
        """Paths for completion: what ripgrep lists (gitignore-aware), relative to the project."""
        from piton.builtin_tools.ripgrep import list_files

        return list_files(self.agent.context.cwd, limit)


def _writable(policy: SandboxPolicy) -> Callable[[Path], bool]:
    def writable(path: Path) -> bool:
        try:
            return policy.check_write(path) == path
        except PolicyError:
            return False

    return writable


def _skill_preparer() -> ActivationPreparer:
    from piton.builtin_tools.skill_body import prepare

    return prepare


def default_tools() -> list[AnyTool]:
    from piton.builtin_tools import builtin_tools

    return builtin_tools()


def _skill_grant(cwd: Path, skill: Skill) -> Grant:
    return Grant(
        where(cwd, skill.path), f"{skill.kind} {skill.name}: allowed-tools {', '.join(skill.allowed_tools)}"
    )


def workspace_trust(
    options: RunOptions,
    *,
    settings: Settings | None = None,
    catalog: Catalog | None = None,
    trust_store: TrustStore | None = None,
) -> Trust:
    """What the folder's own files would grant — the project settings' allow rules, the project
    skills' and commands' allowed-tools — and which of it the user's trust covers."""
    from piton.skills.catalog import discover

    settings = settings if settings is not None else run_settings(options)
    catalog = catalog if catalog is not None else discover(options.cwd)
    grants = [
        rule_grant(options.cwd, path, rule)
        for path, rule in settings.project_rules("allow")
        if valid_rules([rule], "settings", [])
    ]
    grants += [_skill_grant(options.cwd, skill) for skill in catalog.granting()]
    grants += extension_grants(options.cwd, settings, hook_commands(settings, []))
    return decide(
        options.cwd,
        grants,
        trusted_folders=settings.trusted_folders,
        store=trust_store,
        flag=options.trust_workspace,
    )


def build_runtime(
    options: RunOptions,
    provider: Provider,
    *,
    store: SessionStore | None = None,
    tools: list[AnyTool] | None = None,
    approver: Approver | None = None,
    trust_store: TrustStore | None = None,
    sdk_host: SdkHost | None = None,
    extra_tools: list[AnyTool] | None = None,
    telemetry: Telemetry | None = None,
) -> Runtime:
    """Raises `SessionError` for a session that cannot be opened, `SetupError` for bad options.
    Trust comes from `trust_store` (the user's answers; the REPL asks before it builds); `sdk_host`
    is the Agent SDK client that serves in-process (`sdk`) MCP servers, when one drives the run;
    `extra_tools` are a library caller's own, offered whatever `--tools` chose; `telemetry` records
    the session in place of what the environment configures (`CLAUDE_CODE_ENABLE_TELEMETRY`)."""
    from piton.core.project.memory import load_memory
    from piton.skills.agents import agent_types_from_json, discover_agent_types
    from piton.skills.catalog import discover, with_skills
    from piton.skills.output_styles import choose, discover_output_styles
    from piton.skills.plugins import load_plugins

    settings = run_settings(options)
    catalog = discover(options.cwd)
    trust = workspace_trust(options, settings=settings, catalog=catalog, trust_store=trust_store)
    catalog.granted = {s.path for s in catalog.granting() if trust.honours(_skill_grant(options.cwd, s))}
    plugins = load_plugins(options.cwd, settings, trust, options.plugin_dirs, catalog)
    notices = list(settings.warnings)
    if (ignored := trust.notice()) is not None:
        notices.append(ignored)
    notices += apply_user_env(settings)  # before the model is chosen: ANTHROPIC_MODEL may come from it
    permissions = permissions_for(options, settings, trust, notices)
    _check_names(extra_tools or [], tools if tools is not None else default_tools())  # before a session opens
    store = store or SessionStore()
    if (days := settings.cleanup_period_days) is not None:
        store.max_age_days = days
    session = open_session(options, settings, store, notices)
    log = session.log
    results = SessionStore.session_dir(log) / "tool-results"
    agent_types, type_warnings = discover_agent_types(options.cwd)
    if options.agents is not None:
        try:  # the run's own definitions win over the files' of the same name
            agent_types.update(agent_types_from_json(options.agents))
        except ValueError as e:
            raise SetupError(f"--agents: {e}") from e
    agent_types = {**{a.name: a for a in plugins.agents}, **agent_types}  # the files' and flags' win
    agent_types = {name: with_skills(t, catalog) for name, t in agent_types.items()}
    shared = [s.directory for s in catalog.skills.values() if s.directory is not None and s.source == "user"]
    policy = policy_for(options, settings, permissions, [results, *session.earlier_results], shared, notices)
    if settings.auto_allow_sandboxed_bash and policy.mode != "danger-full-access":
        permissions.allow.append(
            Rule("Bash")
        )  # sandbox.autoAllowBashIfSandboxed: deny and ask rules still apply
    notices += configure_limits(settings.sandbox_limits)  # before any sandbox is made (the git probe)
    add_prices({model: Prices(i, o) for model, (i, o) in settings.model_prices.items()})
    memory = load_memory(options.cwd, refuse=_import_refusal(policy))
    notices += [*catalog.warnings, *type_warnings, *memory.warnings, *plugins.warnings]
    threshold = settings.compact_threshold
    compaction = CompactionSettings(enabled=settings.auto_compact, threshold=threshold or 0.8)
    budget = listing_budget(
        settings.model_limits(session.model)[0] or model_info(session.model).context_window
    )
    styles, style_warnings = discover_output_styles(options.cwd, plugins=plugins.plugins)
    notices += style_warnings
    style = choose(styles, settings.output_style, notices)
    sections = [memory.prompt_section(), attribution(settings), catalog.prompt_section(budget)]
    config = _agent_config(options, settings, session, policy, sections, style)
    if options.effort is not None and not model_info(session.model).effort:
        notices.append(f"--effort {options.effort}: {session.model} takes no effort level; ignored")
    notices.extend(w for w in settings.warnings if w not in notices)  # reading values may have added some
    checkpoints = Checkpoints(SessionStore.session_dir(log) / "checkpoints", writable=_writable(policy))
    context = ToolContext(
        cwd=options.cwd,
        session_id=log.session_id,
        policy=policy,
        record=log.record,
        checkpoints=checkpoints,
        timeouts=settings.tool_timeouts,
    )
    if options.permission_mode == "dontAsk":
        approver = DontAsk()
    elif options.permission_mode == "auto":
        notices.append("permission mode auto: Piton has no classifier to decide; asking as in default mode")
    gate = PermissionGate(permissions, approver or DenyAll())
    factory = AgentFactory(
        provider,
        gate,
        FileResultStore(results),
        compaction,
        subagent_suffix="\n\n".join(
            p for p in (environment_section(options.cwd), memory.prompt_section()) if p
        ),
        prepare=_skill_preparer(),
    )
    main: list[Agent] = []  # the Task tool needs the agent it serves, which needs the Task tool

    mirror = claude_transcript(options.cwd, log, session.history)

    def spawn(agent_type: AgentType, agent_id: str, transcript: SessionLog | None) -> Agent:
        if mirror is not None and transcript is not None:
            return factory.subagent(
                main[0], agent_type, agent_id, Mirrored(transcript, mirror.subagent(agent_id))
            )
        return factory.subagent(main[0], agent_type, agent_id, transcript)

    runner = SubagentRunner(spawn, agent_types, subagent_directory(log), budget=budget)
    tool_list = [*default_tools(), _memory(options.cwd, settings)] if tools is None else list(tools)
    tool_list += _extension_tools(catalog, runner, budget, notices)
    tool_list = _chosen_tools(tool_list, options.tools, notices)
    tool_list += extra_tools or []
    for tool in tool_list:
        tool.restore(context, session.records)
    transcript = log if mirror is None else Mirrored(log, mirror)
    agent = factory.build(
        config, tool_list, context, gate=gate, transcript=transcript, history=session.history
    )
    main.append(agent)
    hooks = make_hooks(
        options.cwd,
        settings,
        trust,
        [*hook_commands(settings, notices), *plugins.hooks],
        session_id=log.session_id,
        transcript_path=str(mirror.path if mirror is not None else log.path),
        mode=lambda: str(gate.permissions.mode),
        notices=notices,
    )
    if hooks is not None:
        gate.pre_tool = hooks.pre_tool_use if hooks.has("PreToolUse") else None
        agent.hooks = hooks
        if hooks.has("PostToolUse"):
            agent.after_tool = hooks.post_tool_use
    mcp = _mcp_servers(options, settings, trust, notices, sdk_host, plugins)
    if mcp is not None:
        mcp.attach(agent.tools)
    if telemetry is None:
        from piton.telemetry import from_environment

        telemetry = from_environment(notices.append)
    observer = telemetry.observer(log.session_id) if telemetry is not None else None
    agent.observer = observer
    return Runtime(
        agent,
        log,
        notices,
        catalog=catalog,
        memory=memory,
        agent_types=agent_types,
        trust=trust,
        mcp=mcp,
        hooks=hooks,
        status_command=status_command(options.cwd, settings, trust),
        unsupported=settings.unsupported_keys(),
        plugins=plugins,
        output_style=style if options.system_prompt is None else None,  # a prompt of one's own has none
        output_styles=styles,
        telemetry=observer,
    )


def mcp_selection(
    options: RunOptions, settings: Settings, trust: Trust, plugins: Plugins | None = None
) -> tuple[Found, Selection]:
    """The configured MCP servers and which of them may start: the user's own, `--mcp-config`'s, and
    those of the project's `.mcp.json` the user approved (workspace trust, or the user's
    `enabledMcpjsonServers`); `disabledMcpjsonServers` always wins."""
    from piton.core.mcp.config import McpConfigError, load, select

    try:
        found = load(
            options.cwd,
            settings_servers=getattr(settings, "mcp_servers", None),
            flags=options.mcp_config,
            strict=options.strict_mcp_config,
            project_tables=settings.project_mcp_servers(),
            extra=plugins.servers if plugins is not None else (),
        )
    except McpConfigError as e:
        raise SetupError(str(e)) from e
    chosen = select(
        found,
        approved=lambda server: trust.honours(Grant(server.grant_where, server.grant_what)),
        enable_all=bool(getattr(settings, "enable_all_project_mcp_servers", False)),
        enabled=getattr(settings, "enabled_mcpjson_servers", ()),
        disabled=getattr(settings, "disabled_mcpjson_servers", ()),
    )
    return found, chosen


def _mcp_servers(
    options: RunOptions,
    settings: Settings,
    trust: Trust,
    notices: list[str],
    host: SdkHost | None = None,
    plugins: Plugins | None = None,
) -> McpManager | None:
    """The session's MCP servers, started in the background; None when there are none (the SDK is
    then never imported)."""
    found, chosen = mcp_selection(options, settings, trust, plugins)
    notices += found.warnings
    notices += [
        f"MCP server {s.name} of {s.grant_where} not started: it runs outside the sandbox, so it starts only "
        "once you trust this folder or list it in enabledMcpjsonServers in your settings"
        for s in chosen.pending
    ]
    if not (chosen.active or chosen.pending):
        return None
    from piton.core.mcp.manager import McpManager

    manager = McpManager(
        chosen.active, cwd=options.cwd, pending=chosen.pending, disabled=chosen.disabled, host=host
    )
    manager.start()
    return manager


def _agent_config(
    options: RunOptions,
    settings: Settings,
    session: OpenedSession,
    policy: SandboxPolicy,
    sections: list[str],
    style: OutputStyle,
) -> AgentConfig:
    """The main agent's configuration: its model and limits, and the system prompt (the project's
    memory and the skills listing as its last `sections`, then the output style's instructions)."""
    thinking = options.thinking if options.thinking is not None else settings.thinking
    # git runs in a read-only sandbox: a repository's config can name programs for it to run
    git_sandbox = None if policy.mode == "danger-full-access" else make_sandbox(policy.read_only())
    window, max_output = settings.model_limits(session.model)
    return AgentConfig(
        model=session.model,
        system_prompt=_system_prompt(options, git_sandbox, sections, style),
        cwd=options.cwd,
        session_id=session.log.session_id,
        max_turns=options.max_turns,
        thinking=True if thinking is None else thinking,
        context_window=window,
        max_output_tokens=max_output,
        skills_listing=sections[-1] if options.system_prompt is None else "",
        max_budget_usd=options.max_budget_usd,
        effort=options.effort,
        fallback_model=resolve_alias(options.fallback_model) if options.fallback_model else None,
        max_budget_tokens=options.max_budget_tokens,
        output_style=style.name if style.prompt and options.system_prompt is None else None,
    )


def _system_prompt(
    options: RunOptions, git_sandbox: Sandbox | None, sections: list[str], style: OutputStyle
) -> str:
    """Piton's prompt, or the one `--system-prompt` gives in its place (as Claude Code does, whole:
    the project's memory, the skills listing and the output style go with Piton's own prompt); then
    what is appended."""
    if options.system_prompt is None:
        return build_system_prompt(
            options.cwd,
            append=options.append_system_prompt,
            sandbox=git_sandbox,
            sections=sections,
            style=style,
        )
    parts = (options.system_prompt, options.append_system_prompt or "")
    return "\n\n".join(p.strip() for p in parts if p.strip())


def memory_folder(cwd: Path, settings: Settings) -> Path:
    """Where the memory tool keeps this project's notes: Piton's state directory, or the project's
    `.piton/memories` when the settings say so."""
    from piton.core.conversation.session import project_key, state_dir

    # Piton's folders resolved once, here; below them the memory tool follows no link
    if settings.memory_in_project:
        return Path(os.path.realpath(cwd)) / ".piton" / "memories"
    return Path(os.path.realpath(state_dir())) / "memories" / project_key(cwd)


def _memory(cwd: Path, settings: Settings) -> AnyTool:
    from piton.builtin_tools.memory import Memory

    return Memory(memory_folder(cwd, settings))


def _check_names(extra: list[AnyTool], offered: list[AnyTool]) -> None:
    """A caller's own tools may not take a name a tool of the session has (the built-ins, and
    those offered beside them: memory, Skill, Task, SearchSkills)."""
    from piton.builtin_tools.memory import Memory
    from piton.builtin_tools.search_skills import SearchSkills
    from piton.builtin_tools.skill import Skill
    from piton.builtin_tools.task import Task

    taken = {tool.name for tool in offered} | {t.name for t in (Memory, SearchSkills, Skill, Task)}
    for tool in extra:
        if tool.name in taken:
            raise SetupError(f"tool {tool.name}: a tool of that name is already offered")
        taken.add(tool.name)


def _chosen_tools(tools: list[AnyTool], names: list[str] | None, notices: list[str]) -> list[AnyTool]:
    """The tools `--tools` names ("default" among them: all of them)."""
    if names is None or "default" in names:
        return tools
    known = {tool.name for tool in tools}
    if unknown := [n for n in names if n not in known]:
        notices.append(f"--tools: no tool named {', '.join(unknown)}; ignored")
    return [tool for tool in tools if tool.name in names]


def _extension_tools(
    catalog: Catalog, runner: SubagentRunner, budget: int, notices: list[str]
) -> list[AnyTool]:
    """Skill and Task, and SearchSkills when a listing had no room for everything (said once)."""
    from piton.builtin_tools.search_skills import SearchSkills
    from piton.builtin_tools.skill import Skill
    from piton.builtin_tools.task import Task

    tools: list[AnyTool] = [*([Skill(catalog)] if catalog.for_model() else []), Task(runner)]
    skills, types = catalog.left_out(budget), runner.left_out()
    if skills or types:
        left = [
            f"{n} {what}" for n, what in ((skills, "skills and commands"), (types, "subagent types")) if n
        ]
        notices.append(
            f"the listings the model reads have no room for {' and '.join(left)} (their budget is 2% of "
            "the context window); the model finds them with SearchSkills"
        )
        catalog_types = [("agent", t.name, t.description) for t in runner.types.values()]
        tools.append(SearchSkills(lambda query: catalog.search(query) + ranked(query, catalog_types)))
    return tools


def _import_refusal(policy: SandboxPolicy) -> Callable[[Path, str], str | None]:
    """Why project memory may not read a file: what the file tools may not read either. The user's
    own files may also reach into `~/.claude` (where Claude Code users keep instructions), all but
    its credentials file."""
    claude = real(claude_home(policy.home))

    def refuse(path: Path, scope: str) -> str | None:
        if scope == "user" and path.is_relative_to(claude) and path.name != ".credentials.json":
            return None
        try:
            policy.check_read(path)
        except PolicyError as e:
            return str(e)
        return None

    return refuse
