"""The Bash tool's own behaviour (the sandbox's limits are in tests/core/sandbox)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from piton.builtin_tools.bash import Bash
from piton.core.conversation.messages import ToolUseBlock
from tests.builtin_tools.helpers import call, context, text

pytestmark = pytest.mark.sandbox  # every test here runs commands in bubblewrap

BASH = Bash()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    return tmp_path


def test_output_keeps_its_order_across_stdout_and_stderr(ws: Path) -> None:
    result = call(BASH, context(ws), command="echo one; echo two >&2; echo three")
    assert (text(result), result.is_error, result.summary) == ("one\ntwo\nthree", False, "3 lines")


def test_a_failing_command_reports_its_exit_code(ws: Path) -> None:
    result = call(BASH, context(ws), command="echo partial; exit 7")
    assert text(result) == "partial\nExit code 7"
    assert result.is_error and result.summary == "exit 7"


def test_no_output_says_so(ws: Path) -> None:
    assert text(call(BASH, context(ws), command="true")) == "(no output)"


def test_stdin_is_empty_so_interactive_commands_do_not_hang(ws: Path) -> None:
    result = call(BASH, context(ws), command="cat; read -r line || echo 'no input'", timeout=10_000)
    assert text(result) == "no input"


def test_the_working_directory_carries_over(ws: Path) -> None:
    ctx = context(ws)
    call(BASH, ctx, command="cd sub")
    assert text(call(BASH, ctx, command="pwd")) == str(ws.resolve() / "sub")
    assert text(call(BASH, ctx, command="cd .. && pwd; exit 3")).startswith(str(ws.resolve()))
    assert text(call(BASH, ctx, command="pwd")) == str(
        ws.resolve()
    )  # the cd counted although it failed after


def test_leaving_the_project_resets_the_directory(ws: Path) -> None:
    ctx = context(ws)
    out = text(call(BASH, ctx, command="cd / && pwd"))
    assert out.startswith("/\n") and "was reset to" in out
    assert text(call(BASH, ctx, command="pwd")) == str(ws.resolve())


def test_a_deleted_directory_falls_back_to_the_project(ws: Path) -> None:
    ctx = context(ws)
    call(BASH, ctx, command="mkdir gone && cd gone")
    (ws / "gone").rmdir()
    out = text(call(BASH, ctx, command="pwd"))
    assert out.startswith(str(ws.resolve())) and "is gone" in out


def test_colour_codes_are_removed(ws: Path) -> None:
    assert text(call(BASH, context(ws), command=r"printf '\033[31mred\033[0m plain\n'")) == "red plain"


def test_a_timeout_is_reported(ws: Path) -> None:
    result = call(BASH, context(ws), command="echo before; sleep 30", timeout=300)
    assert (
        result.is_error
        and text(result) == "before\nCommand timed out after 0.3 s; it and its children were killed."
    )


def test_timeouts_above_ten_minutes_are_refused(ws: Path) -> None:
    result = call(BASH, context(ws), command="true", timeout=600_001)
    assert result.is_error and "timeout" in text(result)


def test_huge_output_is_captured_whole(ws: Path) -> None:
    out = text(call(BASH, context(ws), command="head -c 2000000 /dev/zero | tr '\\0' 'x'"))
    assert len(out) == 2_000_000


def test_progress_bars_are_cleaned_and_nul_bytes_shown(ws: Path) -> None:
    out = text(call(BASH, context(ws), command=r"printf '10%%\r50%%\r100%%\nbin\0ary\r\nend\n'"))
    assert out == "100%\nbin\u2400ary\nend"
    out = text(call(BASH, context(ws), command="head -c 2000000 /dev/zero"))
    assert out == "[2,000,000 NUL bytes]"  # binary output is not "(no output)"


def test_of_a_huge_output_the_head_and_the_tail_are_kept(ws: Path) -> None:
    """The end is where a failing command says why: what is cut is the middle, and it is said."""
    command = "echo first-line; head -c 40000000 /dev/zero | tr '\\0' 'x'; echo; echo the-error-at-the-end"
    out = text(call(BASH, context(ws), command=command))
    assert out.startswith("first-line\n") and "the-error-at-the-end" in out
    assert "bytes of output cut here" in out and "from the middle of the output were cut" in out


def test_a_command_that_hides_its_directory_says_so(ws: Path) -> None:
    ctx = context(ws)
    out = text(call(BASH, ctx, command="cd sub && trap - EXIT && exec true"))
    assert "final directory is unknown" in out
    assert text(call(BASH, ctx, command="pwd")) == str(ws.resolve())


def test_writing_to_the_report_descriptor_cannot_steer_the_directory(ws: Path) -> None:
    ctx = context(ws)
    call(BASH, ctx, command="echo / >&3; cd sub")
    assert text(call(BASH, ctx, command="pwd")) == str(ws.resolve() / "sub")


def test_read_only_command_lines_of_one_reply_run_side_by_side_and_others_in_order(ws: Path) -> None:
    """Three `sleep; echo` calls start together; a call that writes waits for them and runs alone."""
    from piton.core.conversation.events import ToolFinished, ToolStarted
    from piton.testing.script import ToolCall, reply
    from piton.testing.scripted import ScriptedProvider
    from tests.fakes.tools import make_agent
    from tests.helpers import collect

    calls = [
        ToolCall("Bash", {"command": "sleep 0.2; echo one"}),
        ToolCall("Bash", {"command": "sleep 0.2; echo two"}),
        ToolCall("Bash", {"command": "ls -a sub | wc -l"}),
        ToolCall("Bash", {"command": "echo made > made.txt"}),
        ToolCall("Bash", {"command": "cat made.txt"}),
    ]
    agent = make_agent(ScriptedProvider(reply(*calls), reply("done")), BASH, cwd=ws)
    agent.context = context(ws)
    order = [
        (type(e).__name__, e.tool_use_id)
        for e in collect(agent.run("go"))
        if isinstance(e, ToolStarted | ToolFinished)
    ]
    ids = [c.id for c in calls]
    starts = [i for i, (kind, _) in enumerate(order) if kind == "ToolStarted"]
    first_finish = next(i for i, (kind, _) in enumerate(order) if kind == "ToolFinished")
    assert [order[i][1] for i in starts[:3]] == ids[:3] and max(starts[:3]) < first_finish
    assert order[-4:] == [
        ("ToolStarted", ids[3]),
        ("ToolFinished", ids[3]),
        ("ToolStarted", ids[4]),
        ("ToolFinished", ids[4]),
    ]
    answers = agent.history[-2]
    assert len(answers.tool_results) == len(answers.content), "the message holds the results alone"
    assert [b.content for b in answers.tool_results] == ["one", "two", "2", "(no output)", "made"]


def test_a_line_that_changes_directory_runs_alone(ws: Path) -> None:
    from piton.core.tools import ToolRegistry

    ctx = context(ws)
    prepare = ToolRegistry([BASH]).prepare
    looks = prepare(ToolUseBlock(id="a", name="Bash", input={"command": "ls sub"}), ctx)
    moves = prepare(ToolUseBlock(id="b", name="Bash", input={"command": "cd sub && ls"}), ctx)
    assert looks.concurrent and not moves.concurrent
    assert moves.read_only, "a cd only looks: it needs no question, it just must not race"


def _prepared(ctx: Any, command: str) -> Any:
    from piton.core.tools import ToolRegistry

    return ToolRegistry([BASH]).prepare(ToolUseBlock(id="b", name="Bash", input={"command": command}), ctx)


def test_which_lines_only_look_and_which_may_run_side_by_side(ws: Path) -> None:
    ctx = context(ws)
    expected = {  # command: (only looks, may run beside others)
        "cat src/a.py": (True, True),
        "grep -rn TOKEN .": (True, True),
        "cd src && ls": (True, False),  # the next call starts where it ends: it runs alone
        "echo made > made.txt": (False, False),
        "python3 -c 'print(1)'": (False, False),
    }
    for command, (looks, concurrent) in expected.items():
        call = _prepared(ctx, command)
        assert (call.read_only, call.concurrent) == (looks, concurrent), command
    unsandboxed = _prepared(context(ws, mode="danger-full-access"), "cat src/a.py")
    assert not unsandboxed.read_only and not unsandboxed.concurrent, "no sandbox to confine a misjudgment"
    confined = _prepared(context(ws, mode="read-only"), "python3 -c 'print(1)'")
    assert confined.concurrent and not confined.read_only, "nothing can write there: any line may overlap"


def test_a_line_that_only_looks_still_needs_permission(ws: Path) -> None:
    """The classification never spares a question: no syntax check knows every file a command
    reads (`cat <.env`, `git show HEAD`); plan mode asks instead of refusing."""
    from piton.core.safety.permissions import PermissionGate, Permissions
    from piton.testing import ScriptedProvider, ToolCall, reply
    from tests.fakes.tools import make_agent
    from tests.helpers import collect

    asked: list[str] = []

    async def approver(request: Any) -> Any:
        from piton.core.safety.permissions import Decision

        asked.append(request.content)
        return Decision("deny", "not now")

    for mode, outcome in (("default", "asked"), ("plan", "asked")):
        asked.clear()
        calls = [ToolCall("Bash", {"command": "cat <.env"}), ToolCall("Bash", {"command": "make"})]
        agent = make_agent(ScriptedProvider(reply(*calls), reply("ok")), BASH, cwd=ws)
        agent.context = context(ws)
        agent.gate = PermissionGate(Permissions(mode, project=ws), approver)  # type: ignore[arg-type]
        collect(agent.run("go"))
        results = [b for m in agent.history for b in m.tool_results]
        assert asked[0] == "cat <.env", f"{mode}: {outcome}"
        assert all(r.is_error for r in results)
        if mode == "plan":
            assert asked == ["cat <.env"] and "plan mode" in str(results[1].content), "make is refused"


def test_a_line_that_only_looks_runs_where_it_cannot_write(ws: Path) -> None:
    """A repository's own config can make `git diff` run a program: the line is classified read-only,
    so that program runs in a read-only sandbox and cannot leave anything behind."""
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / "differ.sh").write_text("#!/bin/sh\necho pwned > pwned.txt\n")
    (ws / "differ.sh").chmod(0o755)
    subprocess.run(["git", "config", "diff.external", str(ws / "differ.sh")], cwd=ws, check=True)
    (ws / "f.txt").write_text("one\n")
    subprocess.run(["git", "add", "f.txt"], cwd=ws, check=True)
    (ws / "f.txt").write_text("two\n")
    ctx = context(ws)
    result = call(BASH, ctx, command="git diff")
    assert "Read-only file system" in text(result), text(result)
    assert not (ws / "pwned.txt").exists()
    written = call(BASH, ctx, command="git diff; echo done > done.txt")  # not read-only: the usual sandbox
    assert not written.is_error and (ws / "done.txt").exists() and (ws / "pwned.txt").exists()
