"""The composition root: a ready session's parts (`Runtime`) from what the user asked for. The terminal,
`-p`, the control protocol, the library and the editors' agent all start here, through
`piton.session.Session`; agents themselves are built by `piton.factory`.

Opening goes in phases, each returning what it found: discover (settings, skills, plugins, trust:
`piton.discovery`), decide the permissions, open the log (`piton.session_setup`), secure (the
sandbox policy and the gate: `piton.permission_setup`), then wire the agent and what runs beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from piton.core.agent import Agent
from piton.core.agent_parts import AfterToolChain, AgentParts, Transcript
from piton.core.checkpoints import Checkpoints
from piton.core.context.compaction import CompactionSettings
from piton.core.context.result_store import FileResultStore
from piton.core.conversation.claude_transcript import ClaudeTranscript, Mirrored
from piton.core.conversation.session import SessionLog, SessionStore
from piton.core.listing import listing_budget
from piton.core.models import Prices, model_info
from piton.core.options import RunOptions
from piton.core.project.system_prompt import OutputStyle, environment_section
from piton.core.providers import Provider
from piton.core.records import record
from piton.core.safety.permissions import Approver
from piton.core.safety.policy import PolicyError, SandboxPolicy
from piton.core.safety.programs import Programs
from piton.core.shells import BackgroundShells
from piton.core.subagent_runner import Fork, Spawn, SubagentRunner
from piton.core.subagents import AgentType
from piton.core.team import Team, limits_from
from piton.core.tools import AnyTool, ToolContext
from piton.discovery import Found, discover
from piton.discovery import workspace_trust as workspace_trust
from piton.extensions import attribution, hook_commands, make_hooks, status_command
from piton.factory import AgentFactory, subagent_directory
from piton.mcp_setup import mcp_selection as mcp_selection
from piton.mcp_setup import mcp_servers
from piton.permission_setup import MACHINE_SANDBOX_NOTICE as MACHINE_SANDBOX_NOTICE
from piton.permission_setup import Secured, permissions_for, secure
from piton.prompt_setup import agent_config, import_refusal
from piton.session_setup import OpenedSession, claude_transcript, open_session
from piton.setup_errors import SetupError as SetupError
from piton.starting import apply_user_env
from piton.starting import run_settings as run_settings
from piton.tool_setup import check_names, chosen_tools, extension_tools, memory_tool, tool_search
from piton.tool_setup import default_tools as default_tools

if TYPE_CHECKING:
    from piton.core.activation_prep import ActivationPreparer
    from piton.core.hooks.session import Hooks
    from piton.core.mcp.manager import McpManager
    from piton.core.mcp.sdk import SdkHost
    from piton.core.project.memory import Memory
    from piton.core.project.trust import Trust, TrustStore
    from piton.core.structured import OutputSchema
    from piton.skills.catalog import Catalog
    from piton.skills.plugins import Plugins
    from piton.telemetry import SessionTelemetry, Telemetry


@record(kw_only=True)
class Parts:
    """What a front end brings to a session besides its options; everything is optional."""

    store: SessionStore | None = None  # where sessions are kept (default: the user's state folder)
    tools: list[AnyTool] | None = None  # in place of the built-ins (tests)
    extra_tools: list[AnyTool] = field(default_factory=list)  # a library caller's own, beside them
    approver: Approver | None = None  # who is asked about a call the rules leave open
    trust_store: TrustStore | None = None  # the user's answers about trusting folders
    sdk_host: SdkHost | None = None  # the Agent SDK client serving in-process (`sdk`) MCP servers
    telemetry: Telemetry | None = None  # in place of what the environment configures
    shells: BackgroundShells | None = None  # background shells a session before this one handed over


@record
class Runtime:
    """A ready session's parts: the agent, its log, what was found, and what the front end may use
    beside the agent's turns. `piton.session.Session` runs its lifecycle."""

    agent: Agent
    log: SessionLog
    notices: list[str] = field(default_factory=list)
    catalog: Catalog | None = None  # skills and custom commands
    memory: Memory | None = None  # the AGENTS.md / CLAUDE.md files loaded
    agent_types: dict[str, AgentType] = field(default_factory=dict)
    trust: Trust | None = None  # what the folder's own files may grant
    mcp: McpManager | None = None  # the MCP servers, running beside the agent
    status_command: tuple[str, bool] | None = None  # the settings' statusLine command, and if sandboxed
    programs: Programs | None = None  # how the settings' programs start (hooks, servers, statusLine)
    unsupported: list[str] = field(default_factory=list)  # settings keys Piton does not apply
    plugins: Plugins | None = None  # the Claude Code plugins loaded, and what they added
    output_style: OutputStyle | None = None  # the style the model answers in
    output_styles: dict[str, OutputStyle] = field(default_factory=dict)  # all found, by lower-case name
    telemetry: SessionTelemetry | None = None  # OpenTelemetry, when turned on

    @property
    def hooks(self) -> Hooks | None:
        """The settings' hooks (the agent's)."""
        return self.agent.hooks

    @property
    def style_name(self) -> str:
        """The output style's name as Claude Code reports it (`default` for Piton's own)."""
        style = self.output_style
        return "default" if style is None or not style.prompt else style.name

    def close(self) -> None:
        """Stop the MCP servers and their processes, and flush the telemetry. Idempotent."""
        if self.mcp is not None:
            self.mcp.close()
        if self.telemetry is not None:
            telemetry, self.telemetry = self.telemetry, None
            telemetry.close()


def build_runtime(options: RunOptions, provider: Provider, *, parts: Parts | None = None) -> Runtime:
    """Raises `SessionError` for a session that cannot be opened, `SetupError` for bad options (told
    before any session is created, where they can be)."""
    parts = parts or Parts()
    found = discover(options, parts.trust_store)
    found.notices += apply_user_env(found.settings)  # before the model is chosen: ANTHROPIC_MODEL may
    permissions = permissions_for(options, found.settings, found.trust, found.notices)
    check_names(parts.extra_tools, parts.tools if parts.tools is not None else default_tools())
    store = parts.store or SessionStore()
    if (days := found.settings.cleanup_period_days) is not None:
        store.max_age_days = days
    opened = open_session(options, found.settings, store, found.notices)
    results = SessionStore.session_dir(opened.log) / "tool-results"
    shared = [
        s.directory for s in found.catalog.skills.values() if s.directory is not None and s.source == "user"
    ]
    readable = [results, *opened.earlier_results]
    secured = secure(options, found.settings, permissions, readable, shared, parts.approver)
    return _wire(options, provider, parts, found, opened, secured, results)


def _wire(
    options: RunOptions,
    provider: Provider,
    parts: Parts,
    found: Found,
    opened: OpenedSession,
    secured: Secured,
    results: Path,
) -> Runtime:
    """The agent, built whole with its collaborators, and what runs beside it."""
    from piton.core.project.memory import load_memory

    settings, log, notices = found.settings, opened.log, [*found.notices, *secured.notices]
    memory = load_memory(options.cwd, refuse=import_refusal(secured.policy))
    notices += memory.warnings
    budget = listing_budget(settings.model_limits(opened.model)[0] or model_info(opened.model).context_window)
    sections = [memory.prompt_section(), attribution(settings), found.catalog.prompt_section(budget)]
    config = agent_config(options, settings, opened, secured.policy, sections, found.style)
    config.prices = {model: Prices(i, o) for model, (i, o) in settings.model_prices.items()}
    config.tool_search = tool_search(provider, secured.gate.permissions)
    if options.effort is not None and not model_info(opened.model).effort:
        notices.append(f"--effort {options.effort}: {opened.model} takes no effort level; ignored")
    compaction = CompactionSettings(
        enabled=settings.auto_compact, threshold=settings.compact_threshold or 0.8
    )
    notices.extend(w for w in settings.warnings if w not in notices)  # reading values may have added some
    suffix = "\n\n".join(p for p in (environment_section(options.cwd), memory.prompt_section()) if p)
    factory = AgentFactory(
        provider, secured.gate, FileResultStore(results), compaction, suffix, prepare=_skill_preparer()
    )
    mirror = claude_transcript(options.cwd, log, opened.history)
    main: list[Agent] = []  # the Task tool needs the agent it serves, which needs the Task tool
    runner = _runner(factory, main, mirror, found, log, budget, options.cwd)
    observer = _telemetry(parts, log.session_id, notices)
    programs = Programs(secured.policy)  # the settings' programs; hooks share the session's command lock
    agent_parts = _parts(options, parts, found, opened, secured, mirror, notices, programs, observer)
    tools = _tools(options, parts, found, runner, budget, agent_parts, opened, notices, config.output)
    main.append(agent := factory.build(config, tools, agent_parts, history=opened.history))
    if mcp := mcp_servers(options, settings, found.trust, notices, parts.sdk_host, found.plugins, programs):
        mcp.attach(agent.tools)
    status = status_command(options.cwd, settings, found.trust, notices)
    notices += _sandboxed_notice(programs, agent_parts.hooks, mcp, status)  # said once, ever
    return Runtime(
        agent,
        log,
        notices,
        catalog=found.catalog,
        memory=memory,
        agent_types=found.agent_types,
        trust=found.trust,
        mcp=mcp,
        status_command=status,
        programs=programs,
        unsupported=settings.unsupported_keys(),
        plugins=found.plugins,
        output_style=found.style if options.system_prompt is None else None,  # a prompt of one's own has none
        output_styles=found.styles,
        telemetry=observer,
    )


def _parts(
    options: RunOptions,
    parts: Parts,
    found: Found,
    opened: OpenedSession,
    secured: Secured,
    mirror: ClaudeTranscript | None,
    notices: list[str],
    programs: Programs,
    observer: SessionTelemetry | None,
) -> AgentParts:
    """The main agent's collaborators: its transcript, tool context, gate, hooks, and the after-tool
    steps (the settings' PostToolUse hooks first; clients put theirs after)."""
    log, gate, policy = opened.log, secured.gate, secured.policy
    context = ToolContext(
        cwd=options.cwd,
        session_id=log.session_id,
        policy=policy,
        record=log.record,
        checkpoints=Checkpoints(SessionStore.session_dir(log) / "checkpoints", writable=_writable(policy)),
        timeouts=found.settings.tool_timeouts,
        # the session's own, or those the session before handed over: they go on
        shells=parts.shells if parts.shells is not None else BackgroundShells(),
        lock=programs.lock,
    )
    hooks = make_hooks(
        options.cwd,
        found.settings,
        found.trust,
        [*hook_commands(found.settings, notices), *found.plugins.hooks],
        session_id=log.session_id,
        transcript_path=str(mirror.path if mirror is not None else log.path),
        mode=lambda: str(gate.permissions.mode),
        notices=notices,
        programs=programs,
    )
    after_tool = AfterToolChain()
    if hooks is not None and hooks.has("PreToolUse"):
        gate.pre_tool = hooks.pre_tool_use
    if hooks is not None and hooks.has("PostToolUse"):
        after_tool.put("settings", hooks.post_tool_use)
    transcript = log if mirror is None else Mirrored(log, mirror)
    return AgentParts(transcript, context, gate, hooks=hooks, after_tool=after_tool, observer=observer)


def _sandboxed_notice(
    programs: Programs, hooks: Hooks | None, mcp: McpManager | None, status: tuple[str, bool] | None
) -> list[str]:
    """One line, the first time any of the settings' programs runs sandboxed for this user: a
    Claude Code user's hook or server ran unconfined there."""
    if not programs.confining:
        return []
    sandboxed = any(h.sandboxed for h in hooks.commands) if hooks is not None else False
    sandboxed |= mcp is not None and mcp.confines_any
    sandboxed |= status is not None and status[1]
    if not sandboxed:
        return []
    from piton.core.conversation.session import private_state_dir
    from piton.core.safety.programs import first_time

    told = first_time(private_state_dir())
    return [told] if told is not None else []


def _telemetry(parts: Parts, session_id: str, notices: list[str]) -> SessionTelemetry | None:
    """What records the session: the caller's telemetry, or what the environment turns on."""
    telemetry = parts.telemetry
    if telemetry is None:
        from piton.telemetry import from_environment

        telemetry = from_environment(notices.append)
    return telemetry.observer(session_id) if telemetry is not None else None


def _tools(
    options: RunOptions,
    parts: Parts,
    found: Found,
    runner: SubagentRunner,
    budget: int,
    agent_parts: AgentParts,
    opened: OpenedSession,
    notices: list[str],
    output: OutputSchema | None,
) -> list[AnyTool]:
    """The tools offered (StructuredOutput too when the answer has a schema), each given back what
    it recorded in the session log (a resumed session's todo list)."""
    context = agent_parts.context
    assert context is not None
    context.agents = runner.agents  # the agents Task starts: every subagent's context shares them
    offered = (
        [*default_tools(), memory_tool(options.cwd, found.settings)] if parts.tools is None else parts.tools
    )
    extensions = extension_tools(found.catalog, runner, context.schedule, budget, notices)
    tools = chosen_tools([*offered, *extensions], options.tools, notices)
    tools += parts.extra_tools
    if output is not None:
        from piton.builtin_tools.structured_output import StructuredOutput

        tools.append(StructuredOutput(output))
    for tool in tools:
        tool.restore(context, opened.records)
    return tools


def _runner(
    factory: AgentFactory,
    main: list[Agent],
    mirror: ClaudeTranscript | None,
    found: Found,
    log: SessionLog,
    budget: int,
    cwd: Path,
) -> SubagentRunner:
    """What the Task tool runs agents with: the session's types, and its team of agents under the
    settings' caps."""
    spawn, fork = _spawner(factory, main, mirror)
    settings = found.settings
    team = Team(limits_from(settings.agent_caps(), settings.agents_wait_in_print))
    return SubagentRunner(spawn, found.agent_types, subagent_directory(log), budget, team, fork, cwd)


def _spawner(factory: AgentFactory, main: list[Agent], mirror: ClaudeTranscript | None) -> tuple[Spawn, Fork]:
    """How the Task tool starts a subagent, or a fork, of the main agent (its transcript mirrored in
    Claude Code's format when the main one is)."""

    def mirrored(agent_id: str, transcript: SessionLog | None) -> Transcript | None:
        if mirror is not None and transcript is not None:
            return Mirrored(transcript, mirror.subagent(agent_id))
        return transcript

    def spawn(
        agent_type: AgentType, agent_id: str, transcript: SessionLog | None, root: Path | None = None
    ) -> Agent:
        return factory.subagent(main[0], agent_type, agent_id, mirrored(agent_id, transcript), root)

    def fork(agent_id: str, transcript: SessionLog | None) -> Agent:
        return factory.fork(main[0], agent_id, mirrored(agent_id, transcript))

    return spawn, fork


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
