"""The one place agents are built: the session's main agent and every subagent it starts share the
provider, permission rules and approver, sandbox policy, result store and compaction settings, and
differ only where a subagent type says so (prompt, tools, model, turn limit, read-only)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field, replace
from pathlib import Path

from piton.core.activation_prep import ActivationPreparer
from piton.core.agent import Agent
from piton.core.agent_parts import AgentConfig, AgentParts, Transcript
from piton.core.agent_view import AgentConversation
from piton.core.context.compaction import CompactionSettings, Compactor
from piton.core.context.result_store import ResultCapper, ResultHandle, ToolResultStore
from piton.core.conversation.messages import Message
from piton.core.conversation.session import SessionLog
from piton.core.deferral import TOOL_SEARCH, DeferredTools, ToolSearchMode
from piton.core.models import model_info, resolve_alias
from piton.core.providers import Provider
from piton.core.records import record
from piton.core.safety.permissions import PermissionGate
from piton.core.safety.policy import SandboxPolicy
from piton.core.subagents import DEFAULT_MAX_TURNS, AgentType, fork_tools, names, tools_for
from piton.core.tools import AnyTool, ToolContext, ToolRegistry
from piton.core.worktrees import seen


@record
class AgentFactory:
    provider: Provider
    gate: PermissionGate
    store: ToolResultStore
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    subagent_suffix: str = ""  # environment and project instructions, after each subagent type's prompt
    prepare: ActivationPreparer | None = None  # runs a loaded skill's `!`cmd`` lines, inlines its `@file`s

    def build(
        self,
        config: AgentConfig,
        tools: Sequence[AnyTool],
        parts: AgentParts,
        *,
        history: Sequence[Message] = (),
    ) -> Agent:
        """An agent with `parts`, and the factory's own: its result capper and compactor, and the
        skill preparer."""
        transcript = parts.transcript

        def log_handle(handle: ResultHandle) -> None:
            if transcript is not None:
                transcript.record("tool_result_handle", **handle.to_dict())

        gate = parts.gate or self.gate
        registry, deferred = _registry(tools, config.tool_search, lambda t: gate.permissions.withholds(t))
        parts = replace(
            parts,
            capper=ResultCapper(self.store, on_store=log_handle),
            compactor=Compactor(self.compaction, self.store),
            prepare=self.prepare,
            deferred=deferred,
        )
        agent = Agent(self.provider, registry, config, history=history, parts=parts)
        context = agent.context
        # WebFetch reads pages through a side request counted as this agent's, and opens a private
        # address only for a rule that names its host; the gate's rules may be swapped later
        context.ask_model = AgentConversation(agent).ask
        context.rule_names = lambda tool, content: gate.permissions.names(tool, content)
        context.reads_documents = lambda: _reads_documents(agent.config.model)
        return agent

    def subagent(
        self,
        parent: Agent,
        agent_type: AgentType,
        agent_id: str,
        transcript: Transcript | None,
        root: Path | None = None,
    ) -> Agent:
        """A fresh agent of `agent_type` under `parent`: the parent's rules, approver and list of
        refusals with grants of its own, the parent's policy (read-only if the type is; with `root`,
        a worktree, that folder its only root), and no history."""
        policy = parent.context.policy
        if agent_type.read_only and policy is not None:
            policy = policy.read_only()
        if root is not None and policy is not None:  # the project stays in view, read-only
            policy = seen(replace(policy, workspace=root, extra_dirs=()), *policy.roots)
        context = _subagent_context(parent, policy, agent_id, transcript)
        if root is not None:  # its files are its own: the parent's checkpoints keep the project's
            context.cwd, context.checkpoints = root, None
        model = resolve_alias(agent_type.model) if agent_type.model else parent.config.model
        # its own ToolSearch, over its own tools, unless its type refuses that tool
        refused = names(TOOL_SEARCH, agent_type.disallowed_tools)
        same_model = model == parent.config.model
        config = replace(
            parent.config,
            model=model,
            system_prompt=f"{agent_type.prompt.strip()}\n\n{self.subagent_suffix}".strip(),
            session_id=agent_id,
            max_turns=agent_type.max_turns,
            context_window=parent.config.context_window if same_model else None,
            max_output_tokens=parent.config.max_output_tokens if same_model else None,
            skills_listing="",
            tool_search=None if refused else parent.config.tool_search,
            output=None,  # the structured answer is the main agent's to give
        )
        # the parent's gate, not the factory's: a client's hooks wrap the main agent's after it is built
        gate = (parent.gate or self.gate).fork()
        mode = subagent_mode(gate.permissions.mode, agent_type)
        if not gate.permissions.allows_mode(mode):  # an agent file cannot lift the settings' narrowing
            mode = gate.permissions.mode
        if mode != gate.permissions.mode:  # the same rules (shared lists), its own mode
            gate.permissions = replace(gate.permissions, mode=mode)  # type: ignore[arg-type]
        from piton.builtin_tools.aliases import requested_aliases

        # LS and TodoRead only for agent files that name them, so community agents keep their tools
        offered = [*parent.tools, *requested_aliases(agent_type.tools)]
        parts = AgentParts(
            transcript=transcript,
            context=context,
            gate=gate,
            hooks=parent.hooks,
            after_tool=parent.after_tool,  # the same steps, a client's included
            agent_id=agent_id,  # its end is a SubagentStop
        )
        return self.build(config, tools_for(agent_type, offered), parts)

    def fork(self, parent: Agent, agent_id: str, transcript: Transcript | None) -> Agent:
        """A fork of `parent`: its system prompt, model, tools (those that are the main agent's
        refused) and history, so that its requests share the parent's prompt cache; its own
        context, grants and transcript, as any subagent's."""
        config = replace(parent.config, session_id=agent_id, max_turns=DEFAULT_MAX_TURNS, output=None)
        parts = AgentParts(
            transcript=transcript,
            context=_subagent_context(parent, parent.context.policy, agent_id, transcript),
            gate=(parent.gate or self.gate).fork(),
            hooks=parent.hooks,
            after_tool=parent.after_tool,
            agent_id=agent_id,
        )
        return self.build(config, fork_tools(list(parent.tools)), parts, history=parent.history)


def _subagent_context(
    parent: Agent, policy: SandboxPolicy | None, agent_id: str, transcript: Transcript | None
) -> ToolContext:
    """A subagent's tool context: its own state and transcript, the parent's lock, shells, agents,
    limits and checkpoints."""
    return ToolContext(
        cwd=parent.context.cwd,
        session_id=agent_id,
        policy=policy,
        record=transcript.record if transcript is not None else parent.context.record,
        lock=parent.context.lock,
        shells=parent.context.shells,
        agents=parent.context.agents,
        schedule=parent.context.schedule,
        timeouts=parent.context.timeouts,
        checkpoints=parent.context.checkpoints,  # a subagent's edits belong to the turn that asked
    )


def _registry(
    tools: Sequence[AnyTool], mode: ToolSearchMode | None, withheld: Callable[[AnyTool], bool]
) -> tuple[ToolRegistry, DeferredTools | None]:
    """The agent's tools but those `withheld` and, with tool search on, a ToolSearch of its own
    over them (a subagent is handed its parent's, which searches the parent's tools)."""
    if mode is None:
        return ToolRegistry(tools, withheld), None
    from piton.builtin_tools.tool_search import ToolSearch

    registry = ToolRegistry((t for t in tools if t.name != TOOL_SEARCH), withheld)
    deferred = DeferredTools(registry, mode)
    registry.register(ToolSearch(deferred))
    return registry, deferred


def _reads_documents(model: str) -> bool:
    """Every Claude model reads PDFs; other vendors' models get their text."""
    info = model_info(model)
    return info.known and info.vendor == "anthropic"


_STRICTNESS = ("plan", "default", "acceptEdits", "bypassPermissions")


def subagent_mode(parent: str, agent_type: AgentType) -> str:
    """A type's `permissionMode`: the user's own types (and `--agents`, and an Agent SDK client's)
    choose it; a project's may only narrow the parent's mode, since anyone who can commit wrote it."""
    wanted = agent_type.permission_mode
    if wanted not in _STRICTNESS or parent not in _STRICTNESS:
        return parent
    if agent_type.source in ("user", "flag", "sdk"):
        return wanted
    return wanted if _STRICTNESS.index(wanted) < _STRICTNESS.index(parent) else parent


def subagent_directory(log: SessionLog) -> Path:
    """Where a session keeps its subagents' transcripts."""
    return log.path.with_suffix("") / "subagents"
