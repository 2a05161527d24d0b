"""Built-in tools, one per module, registered through the same registry as extensions."""

from __future__ import annotations

from piton.core.tools import AnyTool


def builtin_tools() -> list[AnyTool]:
    """Fresh instances of every built-in tool, in a fixed order (the tool list is in the cached prompt)."""
    from piton.builtin_tools.ask import AskUserQuestion
    from piton.builtin_tools.bash import Bash
    from piton.builtin_tools.bash_background import BashOutput, KillShell
    from piton.builtin_tools.edit import Edit
    from piton.builtin_tools.glob import Glob
    from piton.builtin_tools.grep import Grep
    from piton.builtin_tools.notebook import NotebookEdit
    from piton.builtin_tools.plan import ExitPlanMode
    from piton.builtin_tools.read import Read
    from piton.builtin_tools.todo import TodoWrite
    from piton.builtin_tools.web_fetch import WebFetch
    from piton.builtin_tools.web_search import WebSearch
    from piton.builtin_tools.write import Write

    return [
        Bash(),
        BashOutput(),
        KillShell(),
        Glob(),
        Grep(),
        Read(),
        Edit(),
        Write(),
        NotebookEdit(),
        TodoWrite(),
        WebFetch(),
        WebSearch(),
        AskUserQuestion(),
        ExitPlanMode(),
    ]
