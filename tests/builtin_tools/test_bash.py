"""The Bash tool's own behaviour (the sandbox's limits are in tests/core/sandbox)."""

from __future__ import annotations

from pathlib import Path

import pytest

from piton.builtin_tools.bash import Bash
from tests.builtin_tools.helpers import call, context, text

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


def test_progress_bars_and_nul_bytes_are_cleaned(ws: Path) -> None:
    out = text(call(BASH, context(ws), command=r"printf '10%%\r50%%\r100%%\nbin\0ary\r\nend\n'"))
    assert out == "100%\nbinary\nend"


def test_a_command_that_hides_its_directory_says_so(ws: Path) -> None:
    ctx = context(ws)
    out = text(call(BASH, ctx, command="cd sub && trap - EXIT && exec true"))
    assert "final directory is unknown" in out
    assert text(call(BASH, ctx, command="pwd")) == str(ws.resolve())


def test_writing_to_the_report_descriptor_cannot_steer_the_directory(ws: Path) -> None:
    ctx = context(ws)
    call(BASH, ctx, command="echo / >&3; cd sub")
    assert text(call(BASH, ctx, command="pwd")) == str(ws.resolve() / "sub")
