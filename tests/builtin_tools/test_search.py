"""Glob and Grep, over real files with the real ripgrep."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from piton.builtin_tools.glob import Glob
from piton.builtin_tools.grep import Grep
from piton.builtin_tools.ripgrep import rg_path, run_rg
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import NoSandbox
from piton.core.safety.sandbox.base import Launch
from tests.builtin_tools.helpers import call, context, text

GLOB, GREP = Glob(), Grep()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    files = {
        "src/app.py": "import os\n\ndef main():\n    print('Hello World')\n",
        "src/util.py": "def helper():\n    return 'hello'\n",
        "src/web/page.tsx": "export const Page = () => <h1>Hello</h1>\n",
        "tests/test_app.py": "from src.app import main\n\ndef test_main():\n    main()\n",
        "README.md": "# Hello project\n",
        ".github/workflows/ci.yml": "name: ci  # hello\n",
        "build/out.py": "print('hello from build')\n",
        ".env": "SECRET_TOKEN=hello-secret\n",
        ".env.example": "SECRET_TOKEN=hello-placeholder\n",
        "-dash.txt": "hello dash\n",
    }
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    (root / ".gitignore").write_text("build/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".git" / "hello.txt").write_text("hello from inside .git\n")
    for i, rel in enumerate(sorted(files)):  # distinct mtimes: older first in sorted order
        os.utime(root / rel, (1_000_000 + i, 1_000_000 + i))
    return root


def test_rg_is_available() -> None:
    assert os.access(rg_path(), os.X_OK)


def test_glob_matches_like_a_glob_newest_first(repo: Path) -> None:
    out = text(call(GLOB, context(repo), pattern="**/*.py"))
    assert out.splitlines() == [
        str(repo / "tests/test_app.py"),
        str(repo / "src/util.py"),
        str(repo / "src/app.py"),
    ]
    top = call(GLOB, context(repo), pattern="*.md")
    assert text(top) == str(repo / "README.md")


def test_glob_skips_ignored_files_and_git_but_sees_hidden_ones(repo: Path) -> None:
    out = text(call(GLOB, context(repo), pattern="**/*"))
    assert str(repo / ".github/workflows/ci.yml") in out
    assert "build/out.py" not in out and "/.git/" not in out


def test_glob_never_lists_env_files_but_lists_their_templates(repo: Path) -> None:
    out = text(call(GLOB, context(repo), pattern=".env*"))
    assert out == str(repo / ".env.example")


def test_glob_braces_path_and_absolute_patterns(repo: Path) -> None:
    assert text(call(GLOB, context(repo), pattern="**/*.{tsx,md}")).splitlines() == [
        str(repo / "src/web/page.tsx"),
        str(repo / "README.md"),
    ]
    assert text(call(GLOB, context(repo), pattern="*.py", path="src")).splitlines() == [
        str(repo / "src/util.py"),
        str(repo / "src/app.py"),
    ]
    assert text(call(GLOB, context(repo.parent), pattern=f"{repo}/src/**/*.tsx")) == str(
        repo / "src/web/page.tsx"
    )


def test_glob_caps_at_100_with_a_note(tmp_path: Path) -> None:
    for i in range(130):
        (tmp_path / f"f{i:03}.txt").write_text("x")
    out = text(call(GLOB, context(tmp_path), pattern="*.txt"))
    assert len(out.split("\n\n")[0].splitlines()) == 100
    assert out.endswith(
        "(Showing the 100 most recently modified of 130 matches; narrow the pattern or the path to see the rest.)"
    )


def test_glob_with_nothing_found_or_a_bad_directory(repo: Path) -> None:
    assert text(call(GLOB, context(repo), pattern="**/*.rs")) == "No files found"
    assert call(GLOB, context(repo), pattern="*", path="nope").is_error


def test_grep_lists_files_with_matches_newest_first(repo: Path) -> None:
    out = text(call(GREP, context(repo), pattern="hello", **{"-i": True}))
    assert out.splitlines() == [
        str(repo / "src/web/page.tsx"),
        str(repo / "src/util.py"),
        str(repo / "src/app.py"),
        str(repo / "README.md"),
        str(repo / ".github/workflows/ci.yml"),
        str(repo / ".env.example"),
        str(repo / "-dash.txt"),
    ]  # no .env, nothing ignored, nothing inside .git


def test_grep_content_mode_with_line_numbers_and_context(repo: Path) -> None:
    out = text(call(GREP, context(repo), pattern="print", path="src", output_mode="content", **{"-B": 1}))
    assert out.splitlines() == [
        f"{repo}/src/app.py:3-def main():",
        f"{repo}/src/app.py:4:    print('Hello World')",
    ]
    bare = text(
        call(GREP, context(repo), pattern="print", path="src/app.py", output_mode="content", **{"-n": False})
    )
    assert bare == f"{repo}/src/app.py:    print('Hello World')"


def test_grep_count_mode_and_filters(repo: Path) -> None:
    out = call(GREP, context(repo), pattern="def ", output_mode="count", glob="*.py")
    assert sorted(text(out).splitlines()) == sorted(
        [f"{repo}/src/app.py:1", f"{repo}/src/util.py:1", f"{repo}/tests/test_app.py:1"]
    )
    assert out.summary == "3 matches in 3 files"
    typed = text(call(GREP, context(repo), pattern="Hello", type="ts", **{"-i": True}))
    assert typed == str(repo / "src/web/page.tsx")


def test_grep_head_limit_and_multiline(repo: Path) -> None:
    result = call(GREP, context(repo), pattern="hello", head_limit=2, **{"-i": True})
    out = text(result)
    assert out.splitlines()[2] == "(... 5 more; raise head_limit or narrow the search)"
    assert (
        result.data is not None and len(result.data["filenames"]) == 2
    )  # the client sees what the model does
    assert result.data["totalFiles"] == 7
    spanning = call(GREP, context(repo), pattern=r"main\(\):\n\s+print", multiline=True)
    assert text(spanning) == str(repo / "src/app.py")


def test_patterns_and_paths_that_look_like_flags_are_taken_literally(repo: Path) -> None:
    (repo / "flags.txt").write_text("run it with --force-all\n")
    assert text(call(GREP, context(repo), pattern="--force-all")) == str(repo / "flags.txt")
    found = call(GREP, context(repo), pattern="dash", path="-dash.txt", output_mode="content")
    assert text(found) == f"{repo}/-dash.txt:1:hello dash"


def test_grep_reports_bad_regexes_and_no_matches(repo: Path) -> None:
    bad = call(GREP, context(repo), pattern="(unclosed")
    assert bad.is_error and "regex parse error" in text(bad)
    assert text(call(GREP, context(repo), pattern="zzz-not-there")) == "No matches found"
    assert call(GREP, context(repo), pattern="x", path="missing-dir").is_error


def test_grep_cannot_be_pointed_at_credentials(repo: Path) -> None:
    (Path.home() / ".aws").mkdir(exist_ok=True)
    (Path.home() / ".aws" / "credentials").write_text("aws_secret=hello\n")
    result = call(GREP, context(repo), pattern="hello", path="~/.aws")
    assert result.is_error and "credential" in text(result)
    everything = text(call(GREP, context(repo), pattern="aws_secret", path=str(Path.home())))
    assert everything == "No matches found"


def test_glob_patterns_may_start_with_fixed_directories(repo: Path) -> None:
    assert text(call(GLOB, context(repo), pattern="./src/*.py")).splitlines() == [
        str(repo / "src/util.py"),
        str(repo / "src/app.py"),
    ]
    assert text(call(GLOB, context(repo / "tests"), pattern="../src/web/*.tsx")) == str(
        repo / "src/web/page.tsx"
    )


def test_grep_shows_crlf_lines_without_the_carriage_return(tmp_path: Path) -> None:
    (tmp_path / "dos.txt").write_bytes(b"first line\r\nneedle here\r\n")
    out = text(call(GREP, context(tmp_path), pattern="needle", output_mode="content"))
    assert out == f"{tmp_path}/dos.txt:2:needle here"


def test_grep_never_reads_process_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    result = call(GREP, context(tmp_path), pattern="sk-ant", path="/proc/self/environ")
    assert result.is_error and "/proc" in text(result)


def test_grep_over_a_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    result = call(GREP, context(tmp_path), pattern="x", path="pipe")
    assert result.is_error and "FIFO" in text(result)


def test_path_rules_see_the_real_path(repo: Path) -> None:
    from piton.core.safety.permissions import Permissions

    ctx = context(repo)
    permissions = Permissions.from_texts("default", deny=["Read(./src/**)"], project=repo)
    sneaky = GREP.input_model.model_validate({"pattern": "x", "path": "tests/../src"})
    assert permissions.decide(GREP, GREP.rule_content(sneaky, ctx)).behavior == "deny"
    (repo / "alias").symlink_to(repo / "src")
    via_link = GLOB.input_model.model_validate({"pattern": "*", "path": "alias"})
    assert permissions.decide(GLOB, GLOB.rule_content(via_link, ctx)).behavior == "deny"


def test_searches_into_proc_and_sys_are_refused(tmp_path: Path) -> None:
    for tool, arguments in ((GLOB, {"pattern": "/proc/self/*"}), (GREP, {"pattern": "x", "path": "/sys"})):
        result = call(tool, context(tmp_path), **arguments)
        assert result.is_error and "(/proc, /sys) are off limits" in text(result)


@pytest.mark.sandbox
def test_a_ripgrep_the_sandbox_would_hide_is_shown_to_it_and_a_failure_is_no_empty_result(
    tmp_path: Path,
) -> None:
    """Piton installed under /tmp (a checkout there) has its rg where the sandbox mounts a private
    /tmp: the search sandbox shows rg's folder. And a ripgrep that cannot run is an error, never
    "no matches"."""
    import asyncio
    import shutil

    from piton.builtin_tools.ripgrep import run_rg, search_sandbox
    from piton.core.safety.policy import SandboxPolicy

    ws, tools = tmp_path / "ws", tmp_path / "tools"
    ws.mkdir()
    tools.mkdir()
    (ws / "a.txt").write_text("needle\n")
    rg = str(shutil.copy(rg_path(), tools / "rg"))
    policy = SandboxPolicy.create("workspace-write", ws)
    sandbox = search_sandbox(policy, ws, rg)
    assert sandbox is not None
    found = asyncio.run(run_rg(["-l", "needle", str(ws)], cwd=ws, rg=rg, sandbox=sandbox))
    assert (found.code, found.paths()) == (0, [str(ws / "a.txt")])
    missing = asyncio.run(run_rg(["-l", "needle"], cwd=ws, rg=str(tools / "absent"), sandbox=sandbox))
    assert missing.code == 2 and missing.error


class _FailingSandbox(NoSandbox):
    """A sandbox whose bubblewrap fails as it does where it cannot make a mount point."""

    def launch(self, script: str, cwd: Path) -> Launch:
        return Launch(["sh", "-c", 'echo "bwrap: Can\'t mkdir /home/u/.ssh: Permission denied" >&2; exit 1'])


def test_a_sandbox_that_did_not_start_is_an_error_never_no_matches(tmp_path: Path) -> None:
    """bubblewrap exits 1 when it fails, as ripgrep does when nothing matches: told apart by what
    it says, so the model is never told that the code it looks for does not exist."""
    out = asyncio.run(
        run_rg(
            ["-l", "x"],
            tmp_path,
            rg=rg_path(),
            sandbox=_FailingSandbox(SandboxPolicy.create("read-only", tmp_path)),
        )
    )
    assert out.code == 2 and "sandbox could not start" in out.error and "Can't mkdir" in out.error
