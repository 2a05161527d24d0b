"""The terminal renderer, on a recording console (no terminal needed)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from rich.console import Console

from piton.cli.render import CODE_BATCH_S, LIVE_LINES, Renderer
from piton.cli.render_tools import diff_text
from piton.core.conversation.events import (
    MessageDone,
    Notice,
    Result,
    StreamRetry,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolStarted,
)
from piton.core.conversation.messages import Message
from piton.core.conversation.usage import Usage
from piton.core.display import CommandOutput, FileDiff, TodoItem, TodoList
from piton.core.tools import ToolResult


def plain(console: Console, clear: bool = True) -> str:
    """What the console showed, without Rich's padding to the full width."""
    return "\n".join(line.rstrip() for line in console.export_text(clear=clear).split("\n"))


def make(verbose: bool = False, colour: bool = False) -> tuple[Renderer, Console]:
    console = Console(record=True, width=80, color_system="truecolor" if colour else None)
    renderer = Renderer(console, verbose=verbose)
    renderer.begin()
    return renderer, console


def done() -> MessageDone:
    return MessageDone(Message(role="assistant", content=[]), Usage(), "end_turn", "m", "msg_1")


def feed(renderer: Renderer, text: str, size: int = 20) -> None:
    for i in range(0, len(text), size):
        renderer.handle(TextDelta(text[i : i + size]))


def test_finished_blocks_are_printed_once_and_the_tail_stays_live() -> None:
    renderer, console = make()
    feed(renderer, "First paragraph.\n\nSecond **bold** para")
    assert plain(console, clear=False) == "First paragraph.\n"
    assert [text for _, text in renderer.live()][:1] == ["Second **bold** para\n"]
    renderer.handle(done())
    out = plain(console)
    assert out == "First paragraph.\n\nSecond bold para\n"  # rendered as Markdown, once
    assert out.count("First paragraph") == 1


def test_the_live_area_is_bounded_however_long_the_block() -> None:
    renderer, _ = make()
    feed(renderer, "> " + "".join(f"line {i}\n" for i in range(500)))
    live = renderer.live()
    assert len(live) == LIVE_LINES + 1  # the last lines of the block, and the spinner
    assert live[-2][1] == "line 499\n" or live[-2][1] == "\n"
    assert "esc to interrupt" in live[-1][1]


CODE = 'Here:\n\n```python\ndef f(x):\n    """doc\n    more"""\n\n    return x\n\n\n```\n\nAfter.\n'


def _screen(renderer: Renderer, console: Console) -> str:
    """The scrollback and the live area above the spinner, as the terminal shows them."""
    text = plain(console, clear=False) + "".join(text for _, text in renderer.live()[:-1])
    return "\n".join(line.rstrip() for line in text.split("\n"))


def test_a_code_block_streams_highlighted_as_it_will_stay() -> None:
    renderer, console = make(colour=True)
    cut = CODE.index("    return")
    feed(renderer, CODE[:cut] + "    return", size=3)
    # what is shown already looks as it will: the line being typed too, highlighted
    assert _screen(renderer, console) == 'Here:\n\n  def f(x):\n      """doc\n      more"""\n\n      return\n'
    assert ("bold #c678dd", "return") in renderer.live()  # the keyword's colour, as it will be printed
    assert "  def f(x):" in plain(console, clear=False)  # the first line went to the scrollback at once
    time.sleep(CODE_BATCH_S)
    feed(renderer, CODE[cut + 10 :], size=3)
    assert plain(console, clear=False).endswith("      return x\n")  # the next batch is printed
    renderer.handle(done())
    streamed = console.export_text(styles=True, clear=False)

    at_once, whole = make(colour=True)
    feed(at_once, CODE, size=len(CODE))
    at_once.handle(done())
    # the same text, the blank line inside kept and the trailing ones dropped, and the same colours
    shown = plain(console)
    assert shown == plain(whole, clear=False)
    assert shown == 'Here:\n\n  def f(x):\n      """doc\n      more"""\n\n      return x\n\nAfter.\n'
    assert _colours(streamed) == _colours(whole.export_text(styles=True))
    assert ("r", "\x1b[1;38;2;198;120;221m") in _colours(streamed)


def _colours(ansi: str) -> list[tuple[str, str]]:
    """Each visible character with the colour codes in force, so that how runs are split does not matter."""
    out, style = [], ""
    for part in re.split(r"(\x1b\[[0-9;]*m)", ansi):
        if part.startswith("\x1b["):
            style = "" if part in ("\x1b[0m", "\x1b[m") else style + part
        else:
            out += [(ch, style) for ch in part if not ch.isspace()]
    return out


def test_a_long_code_block_is_in_the_scrollback_before_it_ends() -> None:
    renderer, console = make()
    feed(renderer, "```\n" + "".join(f"line {i}\n" for i in range(500)))
    rows = "".join(text for _, text in renderer.live()).splitlines()
    assert len(rows) == LIVE_LINES + 1 and rows[-2] == "  line 499"  # what waits for the next batch
    time.sleep(CODE_BATCH_S)
    feed(renderer, "```")
    shown = plain(console, clear=False).splitlines()
    assert shown[0] == "  line 0" and shown[-1] == "  line 499" and len(shown) == 500
    assert len(renderer.live()) == 1  # a closing fence is never drawn: only the spinner
    renderer.handle(done())
    assert plain(console).count("line 499") == 1


def test_a_fence_opening_is_not_drawn_while_it_streams() -> None:
    renderer, _ = make()
    feed(renderer, "```pyt")
    assert len(renderer.live()) == 1  # only the spinner


def test_thinking_collapses_to_its_last_lines_when_the_answer_starts() -> None:
    renderer, console = make()
    for i in range(6):
        renderer.handle(ThinkingDelta(f"thought {i}\n"))
    assert [t for s, t in renderer.live() if s == "class:thinking"] == [
        "  thought 3\n",
        "  thought 4\n",
        "  thought 5\n",
    ]
    feed(renderer, "Answer.\n\n")
    out = console.export_text()
    assert "✻ Thought for" in out and "3 earlier lines hidden" in out
    assert "thought 0" not in out and "thought 5" in out
    assert out.rstrip().endswith("Answer.")


def test_verbose_shows_all_thinking() -> None:
    renderer, console = make(verbose=True)
    for i in range(6):
        renderer.handle(ThinkingDelta(f"thought {i}\n"))
    renderer.handle(done())
    out = console.export_text()
    assert all(f"thought {i}" in out for i in range(6))


def test_tool_calls_are_one_line_with_a_result_summary_and_a_diff() -> None:
    renderer, console = make()
    renderer.handle(ToolStarted("t1", "Edit", {"file_path": "src/app.py", "old_string": "a"}))
    diff = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    renderer.handle(
        ToolFinished(
            "t1", "Edit", ToolResult("ok", summary="1 replacement", display=FileDiff("src/app.py", diff)), 0.1
        )
    )
    renderer.handle(ToolStarted("t2", "Bash", {"command": "npm test"}))
    output = "".join(f"line {i}\n" for i in range(10))
    shown = ToolResult(
        output + "Exit code 1", is_error=True, summary="exit 1", display=CommandOutput(output, 1)
    )
    renderer.handle(ToolFinished("t2", "Bash", shown, 1.0))
    out = console.export_text()
    assert "● Edit(src/app.py)\n  ⎿  1 replacement\n      --- a/src/app.py" in out
    assert "    1 -a = 1\n    1 +a = 2\n" in out
    assert (
        "● Bash(npm test)\n  ⎿  exit 1\n     line 0\n     line 1\n     line 2\n     line 3\n     … 6 more lines"
        in out
    )


def test_what_is_shown_follows_the_display_type_not_the_tool_name() -> None:
    renderer, console = make()
    todos = TodoList((TodoItem("Plan", "completed", "Planning"), TodoItem("Ship it", "pending", "Shipping")))
    renderer.handle(
        ToolFinished("t1", "Deploy", ToolResult("ok", display=CommandOutput("deployed\n", 0)), 0.1)
    )
    renderer.handle(ToolFinished("t2", "Planner", ToolResult("ok", display=todos), 0.1))
    renderer.handle(ToolFinished("t3", "Bash", ToolResult("secret output", summary="1 line"), 0.1))
    out = plain(console)
    assert "  ⎿  done\n     deployed\n" in out
    assert "    ☒ Plan\n    ☐ Ship it\n" in out
    assert "secret output" not in out, "a result without a display shows its summary only"


def test_calls_that_ran_side_by_side_say_which_result_is_theirs() -> None:
    renderer, console = make()
    renderer.handle(ToolStarted("a", "Bash", {"command": "sleep 2; echo slow"}))
    renderer.handle(ToolStarted("b", "Bash", {"command": "echo fast"}))
    renderer.handle(ToolFinished("b", "Bash", ToolResult("fast", summary="1 line"), 0.1))
    renderer.handle(ToolFinished("a", "Bash", ToolResult("slow", summary="1 line"), 2.0))
    renderer.handle(ToolStarted("c", "Read", {"file_path": "a.py"}))
    renderer.handle(ToolFinished("c", "Read", ToolResult("x", summary="3 lines"), 0.1))
    assert plain(console).split("\n")[:6] == [
        "● Bash(sleep 2; echo slow)",
        "● Bash(echo fast)",
        "  ⎿  Bash(echo fast): 1 line",
        "  ⎿  Bash(sleep 2; echo slow): 1 line",
        "● Read(a.py)",
        "  ⎿  3 lines",
    ]


def test_errors_are_red_and_tool_lines_green() -> None:
    console = Console(record=True, width=80, color_system="truecolor", force_terminal=True)
    renderer = Renderer(console)
    renderer.begin()
    renderer.handle(ToolStarted("t", "Bash", {"command": "false"}))
    renderer.handle(
        ToolFinished("t", "Bash", ToolResult("Exit code 1", is_error=True, summary="exit 1"), 0.1)
    )
    renderer.handle(Result("error_during_execution", True, "API error 500", "s", 1, 1, 1, Usage(), {}, 0.0))
    styled = console.export_text(styles=True)
    assert "\x1b[1;31m  ⎿  API error 500" in styled
    assert "\x1b[31m  ⎿  exit 1" in styled
    assert "\x1b[1;32m● " in styled


def test_a_retry_notice_and_notices_are_shown() -> None:
    renderer, console = make()
    feed(renderer, "partial answ")
    renderer.handle(StreamRetry(1, 3, 0.5, "overloaded_error: Overloaded"))
    renderer.handle(Notice("The model is deprecated."))
    feed(renderer, "Whole answer.")
    renderer.handle(done())
    out = console.export_text()
    assert "asking again" in out and "The model is deprecated." in out
    assert "partial answ" not in out and out.rstrip().endswith("Whole answer.")


def test_a_retried_reply_leaves_one_thought_behind() -> None:
    renderer, console = make()
    renderer.handle(ThinkingDelta("the first attempt's plan"))
    feed(renderer, "partial answ")
    # the thought waits in the live area until the answer's first words reach the scrollback
    assert plain(console, clear=False).strip() == ""
    live = "".join(text for _, text in renderer.live())
    assert "✻ Thought for" in live and "the first attempt's plan" in live
    renderer.handle(StreamRetry(1, 3, 0.5, "overloaded_error: Overloaded"))
    renderer.handle(ThinkingDelta("the second attempt's plan"))
    feed(renderer, "Whole answer.")
    renderer.handle(done())
    out = plain(console)
    assert "first attempt" not in out and out.count("✻ Thought for") == 1
    assert out.index("asking again") < out.index("second attempt's plan") < out.index("Whole answer.")


def test_a_thought_is_printed_before_the_words_that_follow_it() -> None:
    renderer, console = make()
    renderer.handle(ThinkingDelta("plan"))
    feed(renderer, "First paragraph.\n\nSecond")
    out = plain(console, clear=False)
    assert out.index("✻ Thought for") < out.index("plan") < out.index("First paragraph.")
    assert "✻ Thought" not in "".join(text for _, text in renderer.live())


def test_an_interrupt_keeps_what_streamed_and_says_so() -> None:
    renderer, console = make()
    feed(renderer, "half an ans")
    renderer.interrupted()
    out = plain(console)
    assert out == "half an ans\n  ⎿  Interrupted · what should Piton do instead?\n"
    assert renderer.live() == []


def test_control_characters_from_the_model_never_reach_the_terminal() -> None:
    renderer, console = make()
    feed(renderer, "evil \x1b]0;pwned\x07 title\n\n")
    assert "\x1b" not in console.export_text() and "\x07" not in console.export_text()


def test_a_long_answer_shows_every_paragraph_once() -> None:
    renderer, console = make()
    paragraphs = [f"Paragraph number {i} says something." for i in range(300)]
    feed(renderer, "\n\n".join(paragraphs), size=7)
    renderer.handle(done())
    out = plain(console)
    assert [line for line in out.splitlines() if line] == paragraphs


def test_a_compaction_shows_in_the_spinner_and_then_as_a_line() -> None:
    from piton.core.conversation.events import Compacted, Compacting

    renderer, console = make()
    renderer.handle(Compacting("auto"))
    assert "Compacting the conversation…" in "".join(text for _, text in renderer.live())
    renderer.handle(Compacted("auto", 160_000, 12_345, "summary"))
    assert "Working…" in "".join(text for _, text in renderer.live())
    assert " ".join(plain(console).split()) == (
        "✻ Compacted the conversation (auto, earlier part summarised): 160,000 → 12,345 tokens"
    )


def test_an_mcp_tool_call_is_shown_with_its_server_as_claude_code_does() -> None:
    from piton.cli.output import tool_label

    assert tool_label("mcp__github__create_issue", {"title": "Crash on start"}) == (
        "github - create_issue (MCP)(Crash on start)"
    )
    assert tool_label("Read", {"file_path": "a.py"}) == "Read(a.py)"


def test_tool_lines_show_paths_relative_to_the_project_and_keep_the_file_name(tmp_path: Path) -> None:
    from piton.cli.output import tool_label

    base = tmp_path / "acme-platform"
    deep = base / "services" / "billing" / "src" / "billing" / "invoices" / "generated" / "invoice.py"
    assert tool_label("Read", {"file_path": str(base / "main.py")}, base=base) == "Read(main.py)"
    label = tool_label("Edit", {"file_path": str(deep), "old_string": "a"}, width=40, base=base)
    assert label.startswith("Edit(services/billing/") and label.endswith("…/invoice.py)")
    assert len(label) <= len("Edit()") + 40
    assert tool_label("Read", {"file_path": "/etc/hosts"}, base=base) == "Read(/etc/hosts)"
    assert tool_label("Bash", {"command": "echo " + "x" * 80}, width=20) == "Bash(echo xxxxxxxxxxxxxx…)"


def test_a_paragraph_wider_than_the_terminal_wraps_and_grows_as_it_streams() -> None:
    renderer, _ = make()
    words = " ".join(f"w{i}" for i in range(60))  # about 240 columns: three rows at 80
    feed(renderer, words)
    rows = [text for style, text in renderer.live() if style == "class:live"]
    assert len(rows) >= 3 and all(len(r.rstrip("\n")) < 80 for r in rows)
    assert rows[0].startswith("w0 ") and rows[-1].rstrip("\n").endswith("w59")
    feed(renderer, " w60 w61")
    grown = [text for style, text in renderer.live() if style == "class:live"]
    assert grown[:-1] == rows[:-1] and grown[-1].rstrip("\n").endswith("w61")  # only the last row changed


def test_long_thinking_lines_wrap_rather_than_being_cut() -> None:
    renderer, _ = make()
    renderer.handle(ThinkingDelta("x" * 10 + " " + "considering the options " * 10 + "DECIDED"))
    rows = [text for style, text in renderer.live() if style == "class:thinking"]
    assert rows[-1].rstrip("\n").endswith("DECIDED") and all(len(r) <= 80 for r in rows)


def _streamed_and_whole(text: str, size: int = 5) -> tuple[str, str]:
    """The same answer streamed in `size`-character deltas (with a pause where batches would be
    printed) and fed whole, as the terminal shows each, colour codes included."""
    console = Console(record=True, width=80, color_system="truecolor")
    renderer = Renderer(console, code_batch_s=0)  # every line its own batch: the worst case
    renderer.begin()
    feed(renderer, text, size=size)
    renderer.handle(done())
    at_once, whole = make(colour=True)
    feed(at_once, text, size=len(text))
    at_once.handle(done())
    return console.export_text(styles=True), whole.export_text(styles=True)


@pytest.mark.parametrize(
    "block",
    [
        "```java\n/**\n * Returns the value for this key if it is present\n */\nint x = 1;\n```\n",
        "```html\n<!--\n  for if while return\n-->\n<p>hi</p>\n```\n",
        '```python\ndef f():\n    """Doc.\n'
        + "".join(f"    line {n} if for while\n" for n in range(150))
        + '    """\n    return 1\nx = 2\n```\n',
        "````markdown\n# Title\n```python\nfor x in y:\n    pass\n```\nText after.\n````\n",
    ],
    ids=["java-comment", "html-comment", "long-docstring", "nested-fence"],
)
def test_a_streamed_block_is_coloured_as_the_whole_block_is(block: str) -> None:
    streamed, whole = _streamed_and_whole("Here:\n\n" + block)
    assert _colours(streamed) == _colours(whole)


def test_the_live_code_line_expands_tabs_and_belongs_to_the_open_block() -> None:
    renderer, _ = make()
    feed(renderer, "```go\nfunc f() {\n\tif err != nil {\n\t\treturn err")
    live = "".join(text for _, text in renderer.live()[:-1])
    assert "\t" not in live and "          return err" in live  # a tab as spaces, never ^I
    feed(renderer, "\n}\n```\n\n```python\nbe")
    assert ("class:live", "  be") in renderer.live()  # a name: Python's lexer gives it no colour
    feed(renderer, "\n```\n\n```nosuchlang\nbe")  # the same partial line, in a block of another language
    assert ("#abb2bf", "be") in renderer.live()  # drawn for this block, not taken from the last one


def test_a_huge_line_in_a_code_block_is_shown_plainly_not_lexed() -> None:
    renderer, _ = make()
    feed(renderer, "```json\n" + '{"k": "' + "v" * 300_000, size=50_000)
    live = renderer.live()
    assert {style for style, _ in live[:-1]} == {"class:live"}  # wrapped as text, without a lexer
    assert len(live) <= LIVE_LINES + 1


def test_a_call_whose_input_is_a_list_says_what_it_holds() -> None:
    from piton.cli.output import tool_label

    todos = {"todos": [{"content": "a", "status": "pending"}, {"content": "b", "status": "pending"}]}
    assert tool_label("TodoWrite", todos) == "TodoWrite(2 tasks)"
    asked = {"questions": [{"question": "Which  database?", "options": []}, {"question": "Port?"}]}
    assert tool_label("AskUserQuestion", asked) == "AskUserQuestion(Which database? (+1 more))"
    assert tool_label("ExitPlanMode", {"plan": "# The plan\n1. **Do** it"}) == "ExitPlanMode"


def test_a_diff_shows_each_lines_number_in_the_old_or_the_new_file() -> None:
    diff = (
        "--- a/m.py\n+++ b/m.py\n@@ -8,3 +8,4 @@\n x\n-a = 1\n+a = 2\n+b = 3\n y\n"
        "@@ -98,2 +99,1 @@\n q\n-w\n\\ No newline at end of file\n"
    )
    assert diff_text(diff).plain.splitlines() == [
        "       --- a/m.py",
        "       +++ b/m.py",
        "       @@ -8,3 +8,4 @@",
        "     8  x",
        "     9 -a = 1",
        "     9 +a = 2",
        "    10 +b = 3",
        "    11  y",
        "       @@ -98,2 +99,1 @@",
        "    99  q",
        "    99 -w",
        "       \\ No newline at end of file",
    ]


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_the_spinner_is_one_line_at_any_width(width: int) -> None:
    """On a narrow terminal the key hint goes first, then the token count; then what is under way
    is cut, with an ellipsis."""
    console = Console(record=True, width=width, color_system=None)
    renderer = Renderer(console)
    renderer.begin()
    renderer.handle(TextDelta("x" * 4_000))
    renderer.doing = "Waiting for the MCP server github-enterprise to start"
    line = renderer.live()[-1][1].rstrip("\n")
    assert len(line) <= width - 1 and "Waiting for the" in line and "(0s" in line, line
    assert ("esc to interrupt" in line) == (width >= 120)
    assert ("1,000 tokens" in line) == (width >= 80)
    assert ("github-enterprise to start…" in line) == (width >= 80)


def test_long_lines_under_a_call_and_in_thinking_wrap_under_themselves() -> None:
    renderer, console = make()
    renderer.handle(
        ThinkingDelta("first I will look at the lexer, then at the parser, then at every test that uses them")
    )
    renderer.handle(TextDelta("Checking."))
    renderer.handle(ToolStarted("t1", "Read", {"file_path": "gone.py"}))
    error = "File does not exist: /work/project/src/gone.py. The current working directory is /work/project."
    renderer.handle(ToolFinished("t1", "Read", ToolResult(error, is_error=True, summary=error), 0.1))
    rows = console.export_text().splitlines()
    thought = rows.index(next(r for r in rows if r.startswith("✻ Thought")))
    assert rows[thought + 1].startswith("  first I will") and rows[thought + 2].startswith("  ")
    under = rows.index(next(r for r in rows if r.startswith("  ⎿  File does not exist")))
    assert rows[under + 1].startswith("     ") and rows[under + 1].strip(), rows[under : under + 2]
