"""The layers hold: who may import whom, and no module imports itself back through others.

Every import statement counts, at module level, under TYPE_CHECKING and inside functions alike: a
lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# repository folder -> the package it installs as
FOLDERS = {"piton": "piton", "piton/api": "piton.api", "core": "piton.core", "cli": "piton.cli", "builtin_tools": "piton.builtin_tools", "skills": "piton.skills"}  # fmt: skip
# what sits above the layers: the composition root, the session, the library (`piton/` itself)
ROOT_MODULES = (
    *sorted(
        f"piton.{p.stem}" for p in (ROOT / "piton").glob("*.py") if p.stem not in ("__init__", "__main__")
    ),
    "piton.api",
    "piton.testing",
)
# core's own layers, bottom first: a unit (a subpackage or a top-level module) imports only units of
# its own layer or below, and never one that imports it back
CORE_LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "version",
        "mode_names",
        "options",
        "models",
        "display",
        "activation",
        "listing",
        "modes",
        "clip",
        "structured",
        "records",
        "changes",
        "tls",
    ),
    ("conversation",),  # the shared contracts (messages, events, usage, tool results) and sessions
    ("safety",),  # the boundary, auditable alone
    ("checkpoints", "project", "providers", "run_state", "schedule", "shells", "team", "worktrees"),
    ("tools",),  # the tool contract
    ("activation_prep", "context", "deferral", "hooks", "mcp"),
    ("agent_parts", "agent_view", "turn_rules", "tool_round"),  # what an agent is made of
    ("agent", "subagents"),
    ("subagent_runner", "workflow_boot"),  # runs the agents the types describe
    ("workflows",),  # scripts of agents
)


@cache
def modules() -> dict[str, Path]:
    """Each module of the package, and its file. Found when a test first asks (as is the import
    graph below), not while the suite is collected."""
    found: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        base = ROOT / folder
        paths = base.glob("*.py") if folder == "piton" else base.rglob("*.py")
        for path in paths:
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _imports(module: str, path: Path) -> Iterator[str]:
    """The modules `module` imports (for `from a import b`, `a.b` when that is a module, else `a`)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield candidate if candidate in modules() else base


@cache
def graph() -> dict[str, set[str]]:
    """What each module imports."""
    found = {module: set(_imports(module, path)) for module, path in modules().items()}
    # The root names the library's exports for type checkers and loads them when first asked for
    # (`piton.query`); nothing is imported with it, so no module below depends on the library
    # through it.
    found["piton"] = {t for t in found["piton"] if not (t == "piton.api" or t.startswith("piton.api."))}
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _violations(
    layer: str, forbidden: tuple[str, ...], allowed: tuple[str, ...], exempt: tuple[str, ...]
) -> list[str]:
    """Imports of anything `forbidden` by modules of `layer` (but the `exempt` ones), unless the
    target is within one of `allowed`."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph().items()
        if _within(module, layer) and not any(_within(module, e) for e in exempt)
        for target in targets
        if any(_within(target, f) for f in forbidden) and not any(_within(target, a) for a in allowed)
    )


def test_the_tree_is_seen() -> None:
    assert {"piton.core.agent", "piton.cli.repl", "piton.builtin_tools.bash", "piton.runtime"} <= set(
        modules()
    )
    assert "piton.core.agent" in graph()["piton.factory"]


@pytest.mark.parametrize(
    ("layer", "forbidden", "allowed", "exempt"),
    [
        # core is the bottom: no terminal, no tools, no skills, and not the composition root above it
        ("piton.core", ("piton", "rich", "prompt_toolkit", "typer"), ("piton.core",), ()),
        # only the provider package talks to a provider's SDK (the MCP client takes its HTTP client)
        ("piton.core", ("anthropic", "httpx2", "httpx"), (), ("piton.core.providers", "piton.core.mcp")),
        ("piton.core.mcp", ("anthropic", "httpx"), (), ()),
        # the safety boundary can be audited alone (it shares only the names of the modes, and how
        # its records are made)
        (
            "piton.core.safety",
            ("piton",),
            ("piton.core.safety", "piton.core.mode_names", "piton.core.records"),
            (),
        ),
        ("piton.builtin_tools", ("piton.cli", "piton.skills", *ROOT_MODULES), (), ()),
        ("piton.skills", ("piton.cli", "piton.builtin_tools", *ROOT_MODULES), (), ()),
        # the library is what the terminal is built on, never the other way round
        ("piton.api", ("piton.cli", "rich", "prompt_toolkit", "typer"), (), ()),
        # the terminal reaches tools through the session the composition root built
        ("piton.cli", ("piton.builtin_tools",), (), ()),
    ],
)
def test_imports_go_down_the_layers(
    layer: str, forbidden: tuple[str, ...], allowed: tuple[str, ...], exempt: tuple[str, ...]
) -> None:
    assert _violations(layer, forbidden, allowed, exempt) == []


def _core_unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["piton", "core"] else None


def test_core_goes_up_its_layers_one_way() -> None:
    layer = {unit: i for i, units in enumerate(CORE_LAYERS) for unit in units}
    units = {u for m in graph() if (u := _core_unit(m)) is not None}
    assert units == set(layer), "every unit of core has its place in CORE_LAYERS"
    edges = {
        (_core_unit(module), _core_unit(target))
        for module, targets in graph().items()
        for target in targets
        if _core_unit(module) is not None and _core_unit(target) is not None
    }
    edges = {(a, b) for a, b in edges if a != b}
    upward = sorted(f"{a} imports {b}" for a, b in edges if layer[str(b)] > layer[str(a)])
    both_ways = sorted(f"{a} <-> {b}" for a, b in edges if (b, a) in edges and str(a) < str(b))
    assert (upward, both_ways) == ([], [])


def test_core_takes_nothing_from_the_package_root() -> None:
    assert [
        f"{m} imports {t}"
        for m, ts in graph().items()
        if _within(m, "piton.core")
        for t in ts
        if t == "piton"
    ] == []


def test_the_root_imports_nothing() -> None:
    root = ast.parse((ROOT / "piton" / "__init__.py").read_text(encoding="utf-8"))
    at_import = [ast.unparse(n) for n in root.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert at_import == [], "importing the root imports nothing of Piton's"
    lazy = [n for n in root.body if isinstance(n, ast.If | ast.FunctionDef)]
    assert {n.test.id for n in lazy if isinstance(n, ast.If) and isinstance(n.test, ast.Name)} <= {
        "TYPE_CHECKING"
    }
    assert {n.name for n in lazy if isinstance(n, ast.FunctionDef)} <= {"__getattr__"}


def test_no_module_imports_itself_back() -> None:
    internal = {m: {t for t in targets if t in modules() and t != m} for m, targets in graph().items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(internal[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(internal):
        if module not in state:
            visit(module)
    assert [" -> ".join(c) for c in cycles] == []


# -- sizes a newcomer can hold ---------------------------------------------------------------------
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 60
# Longer ones, each named with its reason in docs/decisions.md ("Sizes").
LONGER_MODULES: dict[str, int] = {}
LONGER_FUNCTIONS: dict[str, int] = {}
# The phases that open a session, each under this cyclomatic complexity.
OPENING = (
    "runtime",
    "discovery",
    "session_setup",
    "permission_setup",
    "mcp_setup",
    "prompt_setup",
    "tool_setup",
)
MAX_COMPLEXITY = 15


def _functions(path: Path) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _lines(node: ast.AST) -> int:
    return int(getattr(node, "end_lineno", 0) or 0) - int(getattr(node, "lineno", 0) or 0) + 1


def complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """McCabe's number: one, and one more for each place the way through the function forks."""
    forks = 1
    for node in ast.walk(function):
        if isinstance(node, ast.If | ast.IfExp | ast.For | ast.AsyncFor | ast.While | ast.ExceptHandler):
            forks += 1
        elif isinstance(node, ast.BoolOp):
            forks += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            forks += 1 + len(node.ifs)
        elif isinstance(node, ast.match_case | ast.Assert):
            forks += 1
    return forks


def test_no_module_is_too_long_to_hold_in_ones_head() -> None:
    found = {
        m: n
        for m, p in modules().items()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert {m: n for m, n in found.items() if n > LONGER_MODULES.get(m, 0)} == {}


def test_no_function_runs_past_a_screen() -> None:
    found = {
        f"{module}.{node.name}:{node.lineno}": _lines(node)
        for module, path in modules().items()
        for node in _functions(path)
        if _lines(node) > MAX_FUNCTION_LINES
    }
    allowed = {k: n for k, n in found.items() if LONGER_FUNCTIONS.get(k.rsplit(":", 1)[0], 0) >= n}
    assert {k: n for k, n in found.items() if k not in allowed} == {}


def test_each_phase_of_opening_a_session_reads_simply() -> None:
    found = {
        f"piton.{name}.{node.name}": complexity(node)
        for name in OPENING
        for node in _functions(modules()[f"piton.{name}"])
        if complexity(node) >= MAX_COMPLEXITY
    }
    assert found == {}


def test_the_complexity_measure_counts_forks() -> None:
    source = (
        "def f(a, b):\n    if a and b:\n        return [x for x in a if x]\n    for c in b:\n        pass\n"
    )
    [function] = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)]
    assert complexity(function) == 1 + 1 + 1 + 2 + 1  # if, and, comprehension with its if, for
