"""The build stays reproducible: constraints.txt pins every dependency pyproject.toml names, each pin
lies in its range, the environment the tests run in holds the pinned versions, and no product
module reaches into another package's private names (a release that moves them breaks Piton)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.test_structure import modules

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
# Underscore names other packages document for use (`os._exit` ends a process without teardown).
PUBLIC_UNDERSCORES = {"os._exit"}


def pins() -> dict[str, Version]:
    found: dict[str, Version] = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, equals, version = line.partition("==")
        assert equals and re.fullmatch(r"[\w.!+-]+", version), f"not an exact pin: {line!r}"
        found[canonicalize_name(name)] = Version(version)
    return found


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = [
        *project["dependencies"],
        *(r for extra in project["optional-dependencies"].values() for r in extra),
    ]
    return [Requirement(text) for text in listed]


def test_every_dependency_is_pinned_within_its_range() -> None:
    pinned = pins()
    problems = []
    for requirement in requirements():
        version = pinned.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement.name} has no pin")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}=={version} is outside {requirement.specifier}")
    assert problems == []


def test_every_lower_bound_was_tested() -> None:
    """A range's floor lies in the pinned version's major.minor series: the versions the tests ran
    with. Moving the pins to a newer series means moving the floors with them."""
    pinned = pins()
    problems = []
    for requirement in requirements():
        floors = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==")]
        version = pinned[canonicalize_name(requirement.name)]
        series = Version(".".join(map(str, version.release[:2])))
        if not floors or max(floors) < series:
            floor = max(floors) if floors else "none"
            problems.append(f"{requirement.name}: the floor {floor} was never tested (the pin is {version})")
    assert problems == []


def test_the_tests_run_on_the_pinned_versions() -> None:
    """install.py installed from constraints.txt: whatever it pins and is installed here is exactly
    the pinned version."""
    off = []
    for name, version in pins().items():
        try:
            installed = Version(importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            continue
        if installed != version:
            off.append(f"{name} {installed} (pinned {version})")
    assert off == []


def _private_uses(path: Path) -> list[str]:
    """`import x._y`, `from x._y import z`, `from x import _y`, and `m._y` on an imported module `m`,
    for packages other than Piton."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    modules: dict[str, str] = {}  # local name -> imported module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += [alias.name] if _private_path(alias.name) else []
                # `import a.b` binds `a`; `import a.b as c` binds `c` to `a.b`
                top = alias.name.split(".")[0]
                modules[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            found += [n for n in names if _private_path(n)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            name = f"{modules[node.value.id]}.{node.attr}"
            if _private_path(name) and name not in PUBLIC_UNDERSCORES:
                found.append(name)
    return found


def _private_path(dotted: str) -> bool:
    parts = dotted.split(".")
    if parts[0] in ("piton", "__future__"):
        return False
    return any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts)


def test_no_product_module_uses_another_packages_private_names() -> None:
    found = {module: uses for module, path in modules().items() if (uses := _private_uses(path))}
    assert found == {}


def test_the_private_name_check_sees_each_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import atexit\nimport anthropic.lib._tracing\nfrom mcp.shared._httpx_utils import make\n"
        "from anthropic import _base_client\nimport os\natexit._run_exitfuncs()\nos._exit(0)\n"
        "from piton.core import _private\n"
    )
    assert sorted(_private_uses(sample)) == [
        "anthropic._base_client",
        "anthropic.lib._tracing",
        "atexit._run_exitfuncs",
        "mcp.shared._httpx_utils.make",
    ]


def test_every_pin_runs_on_the_oldest_python_piton_supports() -> None:
    """A pin whose Requires-Python excludes the project's floor would make the install fail there
    (Debian 12's python3 is 3.11.2; a release needing 3.11.5 cannot be installed on it)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    floor = min(Version(s.version) for s in SpecifierSet(project["requires-python"]) if s.operator == ">=")
    excluded = []
    for name in pins():
        try:
            needs = importlib.metadata.metadata(name).get_all("Requires-Python") or []
        except importlib.metadata.PackageNotFoundError:
            continue
        if needs and not SpecifierSet(needs[0]).contains(floor, prereleases=True):
            excluded.append(f"{name} needs Python {needs}")
    assert excluded == []
