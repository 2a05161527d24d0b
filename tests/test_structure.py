"""The layers hold: who may import whom, and no module imports itself back through others.

Every import statement counts, at module level, under TYPE_CHECKING and inside functions alike: a
lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# repository folder -> the package it installs as
FOLDERS = {"piton": "piton", "piton/api": "piton.api", "core": "piton.core", "cli": "piton.cli", "builtin_tools": "piton.builtin_tools", "skills": "piton.skills"}  # fmt: skip
ROOT_MODULES = ("piton.runtime", "piton.factory", "piton.testing")


def _modules() -> dict[str, Path]:
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


MODULES = _modules()


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
                yield candidate if candidate in MODULES else base


GRAPH = {module: set(_imports(module, path)) for module, path in MODULES.items()}
# The root names the library's exports for type checkers and loads them when first asked for
# (`piton.query`); nothing is imported with it, so no module below depends on the library through it.
GRAPH["piton"] = {t for t in GRAPH["piton"] if not (t == "piton.api" or t.startswith("piton.api."))}


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _violations(
    layer: str, forbidden: tuple[str, ...], allowed: tuple[str, ...], exempt: tuple[str, ...]
) -> list[str]:
    """Imports of anything `forbidden` by modules of `layer` (but the `exempt` ones), unless the
    target is within one of `allowed`."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if _within(module, layer) and not any(_within(module, e) for e in exempt)
        for target in targets
        if any(_within(target, f) for f in forbidden) and not any(_within(target, a) for a in allowed)
    )


def test_the_tree_is_seen() -> None:
    assert {"piton.core.agent", "piton.cli.repl", "piton.builtin_tools.bash", "piton.runtime"} <= set(MODULES)
    assert "piton.core.agent" in GRAPH["piton.factory"]


@pytest.mark.parametrize(
    ("layer", "forbidden", "allowed", "exempt"),
    [
        # core is the bottom: no terminal, no tools, no skills, and not the composition root above it
        ("piton.core", ("piton", "rich", "prompt_toolkit", "typer"), ("piton.core",), ()),
        # only the provider package talks to a provider's SDK (the MCP client takes its HTTP client)
        ("piton.core", ("anthropic", "httpx2", "httpx"), (), ("piton.core.providers", "piton.core.mcp")),
        ("piton.core.mcp", ("anthropic", "httpx"), (), ()),
        # the safety boundary can be audited alone
        ("piton.core.safety", ("piton",), ("piton.core.safety",), ()),
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
    found = _violations(layer, forbidden, allowed, exempt)
    if layer == "piton.core" and "piton" in forbidden:
        # the one thing core takes from the package above it is the version constant in its __init__
        found = [v for v in found if not v.endswith(" imports piton")]
    assert found == []


def test_the_version_is_all_core_takes_from_the_package_root() -> None:
    root = ast.parse((ROOT / "piton" / "__init__.py").read_text(encoding="utf-8"))
    at_import = [ast.unparse(n) for n in root.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert at_import == [], "importing the root imports nothing of Piton's"
    lazy = [n for n in root.body if isinstance(n, ast.If | ast.FunctionDef)]
    assert {n.test.id for n in lazy if isinstance(n, ast.If) and isinstance(n.test, ast.Name)} <= {
        "TYPE_CHECKING"
    }
    assert {n.name for n in lazy if isinstance(n, ast.FunctionDef)} <= {"__getattr__"}


def test_no_module_imports_itself_back() -> None:
    internal = {m: {t for t in targets if t in MODULES and t != m} for m, targets in GRAPH.items()}
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
