"""The tools a session offers: the built-ins, the memory tool, Skill and Task (and SearchSkills when
the listings have no room), narrowed by `--tools`, and a library caller's own beside them; and
whether the rarely needed ones wait behind ToolSearch (tool search)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from piton.core.deferral import TOOL_SEARCH, ToolSearchMode, tool_search_mode
from piton.core.listing import ranked
from piton.core.project.settings import Settings
from piton.core.safety.permissions import Permissions
from piton.core.subagent_runner import SubagentRunner
from piton.core.subagents import AGENT_TOOLS, SCHEDULE_TOOLS
from piton.core.tools import AnyTool
from piton.setup_errors import SetupError

if TYPE_CHECKING:
    from piton.core.schedule import Schedule
    from piton.skills.catalog import Catalog


def default_tools() -> list[AnyTool]:
    from piton.builtin_tools import builtin_tools

    return builtin_tools()


def memory_folder(cwd: Path, settings: Settings) -> Path:
    """Where the memory tool keeps this project's notes: Piton's state directory, or the project's
    `.piton/memories` when the settings say so."""
    from piton.core.conversation.session import private_state_dir, project_key

    # Piton's folders resolved once, here; below them the memory tool follows no link
    if settings.memory_in_project:
        return Path(os.path.realpath(cwd)) / ".piton" / "memories"
    return Path(os.path.realpath(private_state_dir())) / "memories" / project_key(cwd)


def memory_tool(cwd: Path, settings: Settings) -> AnyTool:
    from piton.builtin_tools.memory import Memory

    return Memory(memory_folder(cwd, settings))


def check_names(extra: list[AnyTool], offered: list[AnyTool]) -> None:
    """A caller's own tools may not take a name a tool of the session has (the built-ins, and
    those offered beside them: memory, Skill, Task, SearchSkills, ToolSearch)."""
    from piton.builtin_tools.memory import Memory
    from piton.builtin_tools.search_skills import SearchSkills
    from piton.builtin_tools.skill import Skill
    from piton.builtin_tools.task import Task

    taken = {tool.name for tool in offered} | {t.name for t in (Memory, SearchSkills, Skill, Task)}
    taken |= {*AGENT_TOOLS, *SCHEDULE_TOOLS, "Workflow"}
    taken.add(TOOL_SEARCH)
    for tool in extra:
        if tool.name in taken:
            raise SetupError(f"tool {tool.name}: a tool of that name is already offered")
        taken.add(tool.name)


def chosen_tools(tools: list[AnyTool], names: list[str] | None, notices: list[str]) -> list[AnyTool]:
    """The tools `--tools` names ("default" among them: all of them)."""
    if names is None or "default" in names:
        return tools
    known = {tool.name for tool in tools}
    if unknown := [n for n in names if n not in known]:
        notices.append(f"--tools: no tool named {', '.join(unknown)}; ignored")
    return [tool for tool in tools if tool.name in names]


def extension_tools(
    catalog: Catalog, runner: SubagentRunner, schedule: Schedule, budget: int, notices: list[str]
) -> list[AnyTool]:
    """Skill, Task and the tools that reach the agents it starts, and SearchSkills when a listing had
    no room for everything (said once)."""
    from piton.builtin_tools.agent_tools import ListAgents, SendMessage, TaskStop
    from piton.builtin_tools.schedule_tools import schedule_tools
    from piton.builtin_tools.search_skills import SearchSkills
    from piton.builtin_tools.skill import Skill
    from piton.builtin_tools.task import Task
    from piton.builtin_tools.workflow_tool import workflow_tool
    from piton.builtin_tools.worktree_tools import EnterWorktree, ExitWorktree, MergeWorktree

    tools: list[AnyTool] = [*([Skill(catalog)] if catalog.for_model() else []), Task(runner)]
    tools += [SendMessage(runner), ListAgents(runner), TaskStop(runner), MergeWorktree(runner)]
    tools += [EnterWorktree(), ExitWorktree()]
    tools += schedule_tools(schedule)
    if (workflows := workflow_tool(runner, runner.cwd, notices)) is not None:
        tools.append(workflows)
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


def tool_search(provider: object, permissions: Permissions) -> ToolSearchMode | None:
    """Whether the session's rarely needed tools wait behind ToolSearch: as `ENABLE_TOOL_SEARCH` and
    the API the requests go to say (`core/deferral.py`), unless a rule refuses ToolSearch itself (the
    deferred tools could then never be loaded)."""
    if any(rule.tool == TOOL_SEARCH and rule.specifier is None for rule in permissions.deny):
        return None
    # a provider that does not say where its requests go (a test's, a caller's own) gets every tool
    return tool_search_mode(os.environ, getattr(provider, "platform", None))
