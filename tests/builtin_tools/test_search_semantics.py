"""What Glob's and Grep's answers mean, whichever way they are computed: ripgrep selecting the files
itself where its syntax agrees with ours, matching here where it may not. Real files, the real rg."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from piton.builtin_tools.glob import Glob, rg_selection
from piton.builtin_tools.grep import Grep
from piton.builtin_tools.ripgrep import rg_path
from piton.core.safety.globs import compile_glob
from tests.builtin_tools.helpers import call, context, text

FILES = [
    "a.py", "b.PY", ".hidden.py", "top.md", "a1.txt", "a2.txt", "ab.txt", "xa.py", "src.py",
    "src/a.py", "src/b.ts", "src/c.tsx", "src/web/page.tsx", "src/web/deep/x.py", "srcx/a.py",
    "lib/util.js", "lib/a.b.c.txt", "sp ace/f g.txt", "x,y/z.md", "é/ü.txt", "q?/r.txt",
    "tests/test_a.py", "tests/data/test_c.py", ".github/workflows/ci.yml", "b/a.py",
    "logs/.gitkeep", "logs/app.py", "build/out.py", "x.log",
]  # fmt: skip
PATTERNS = [
    "*", "**", "**/*", "*.py", "**/*.py", "src/*", "src/**", "src/**/*.tsx", "**/*.{ts,tsx}",
    "*.{md,txt}", "{src,lib}/**/*.ts", "{src,lib}/*", "**/test_*.py", "tests/**/test_?.py", "?.py",
    "a?.txt", "**/web/**", "**/*.PY", "*.py*", "**/.hidden*", ".*", "**/.*/**", "a*", "**/a*",
    "*/*", "*/*/*", "sp ace/*", "x,y/*", "src*", "src*/**", "{a,b}.py", "a[0-9].txt", "a[!1].txt",
    "**/[ab].py", "é/*", "**/**/x.py", "**/src/**", "{*.py,*.md}", "**/{a,b}.py", "*.{,py}",
    "**a.py", "**/.gitkeep", "**/*.log", "**/*a.py", "**/?.py", "q?/*", "**/*,*", "!*.py", "#*",
    "\\*.py", "{{a,b},c}.py", "**/x:y", "logs/*",
]  # fmt: skip


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("hello\n")
    (root / ".gitignore").write_text("build/\n*.log\nlogs/*\n!logs/.gitkeep\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".git" / "hello.py").write_text("hello\n")
    return root


def _meant(root: Path, pattern: str) -> list[str]:
    """The files `pattern` means: of those ripgrep lists (.gitignore kept, hidden ones in, never
    .git), the ones our glob syntax matches whole."""
    listed = subprocess.run(
        [rg_path(), "--no-config", "--files", "--hidden", "--glob=!.git", "--null"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")[:-1]
    matcher = compile_glob(pattern)
    return sorted(rel for rel in listed if matcher.fullmatch(rel))


def _globbed(root: Path, pattern: str) -> list[str]:
    out = text(call(Glob(), context(root), pattern=pattern))
    return [] if out == "No files found" else sorted(os.path.relpath(p, root) for p in out.splitlines())


def test_glob_lists_what_the_pattern_means_whoever_matches_it(tree: Path) -> None:
    wrong = {p: (got, want) for p in PATTERNS if (got := _globbed(tree, p)) != (want := _meant(tree, p))}
    assert wrong == {}


def test_ripgrep_selects_the_files_of_the_usual_patterns_and_leaves_the_rest_to_us() -> None:
    for pattern in ("**/*.py", "*.md", "**/test_*.py", "**/*.{ts,tsx}", "a[0-9].txt", "*", "**"):
        assert rg_selection(pattern) is not None, pattern
    for pattern in (
        "src/*/x.py",
        "**/web/**",
        "!*.py",
        "#*",
        "\\*.py",
        "{{a,b},c}.py",
        "a[!1].txt",
        "**/x:y",
    ):
        assert rg_selection(pattern) is None, pattern


def test_a_file_gitignore_lets_through_is_listed_only_when_it_matches(tree: Path) -> None:
    python = ["a.py", ".hidden.py", "xa.py", "src.py", "src/a.py", "src/web/deep/x.py", "srcx/a.py"]
    python += ["tests/test_a.py", "tests/data/test_c.py", "b/a.py"]
    # not logs/.gitkeep (.gitignore lets it through), not logs/app.py or build/out.py (ignored)
    assert _globbed(tree, "**/*.py") == sorted(python)
    assert _globbed(tree, "**/.gitkeep") == ["logs/.gitkeep"]


def test_newest_first_whichever_way_it_was_matched(tree: Path) -> None:
    order = ["src/web/deep/x.py", "a.py", "tests/data/test_c.py", "src/a.py", "b/a.py", "xa.py"]
    for age, rel in enumerate(order):
        os.utime(tree / rel, ns=(2_000_000_000_000_000_000 - age * 1_000_000_000,) * 2)
    newest = _globbed_in_order(tree, "**/*.py")  # ripgrep selects
    assert newest[: len(order)] == order
    assert _globbed_in_order(tree, "*/*/*.py") == ["tests/data/test_c.py"]
    assert _globbed_in_order(tree, "{b,src}/*.py") == ["src/a.py", "b/a.py"]  # matched here


def _globbed_in_order(root: Path, pattern: str) -> list[str]:
    return [os.path.relpath(p, root) for p in text(call(Glob(), context(root), pattern=pattern)).splitlines()]


@pytest.mark.parametrize("pattern", ["*", "**", "**/*", "*.py", "**/*.py"])
def test_no_pattern_brings_back_the_git_folder(tree: Path, pattern: str) -> None:
    assert not [p for p in _globbed(tree, pattern) if p.startswith(".git/")]
    found = text(call(Grep(), context(tree), pattern="hello", glob=pattern))
    assert "/.git/" not in found and found != "No matches found"


def test_grep_count_and_content_leave_out_what_policy_hides(tree: Path) -> None:
    (tree / ".env").write_text("hello=1\nhello=2\n")
    (tree / "dos.txt").write_bytes(b"hello\r\nworld\r\nhello again\r\n")
    count = call(Grep(), context(tree), pattern="hello", output_mode="count")
    lines = text(count).splitlines()
    assert f"{tree}/dos.txt:2" in lines and not any(".env:" in line for line in lines)
    assert count.summary == f"{len(lines) + 1} matches in {len(lines)} files"
    content = call(Grep(), context(tree), pattern="hello|world", output_mode="content", **{"-C": 1})
    assert ".env" not in text(content)
    assert f"{tree}/dos.txt:1:hello\n{tree}/dos.txt:2:world\n{tree}/dos.txt:3:hello again" in text(content)
    limited = text(call(Grep(), context(tree), pattern="hello", output_mode="content", head_limit=3))
    assert limited.splitlines()[3] == f"(... {len(lines) - 2:,} more; raise head_limit or narrow the search)"


def test_grep_over_many_files_reports_every_one(tmp_path: Path) -> None:
    for i in range(3000):
        (tmp_path / f"f{i:04}.txt").write_text("needle\n" * (i % 3 + 1))
    result = call(Grep(), context(tmp_path), pattern="needle", output_mode="count")
    assert result.summary == "6000 matches in 3000 files"
    assert sorted(text(result).splitlines())[:2] == [f"{tmp_path}/f0000.txt:1", f"{tmp_path}/f0001.txt:2"]
