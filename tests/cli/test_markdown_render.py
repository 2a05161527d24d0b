from __future__ import annotations

from rich.console import Console
from rich.text import Text

from piton.cli.markdown_render import inline, render_block


def shown(block: str, styles: bool = False) -> str:
    console = Console(
        record=True, width=60, color_system="truecolor" if styles else None, force_terminal=styles
    )
    console.print(render_block(block))
    return "\n".join(line.rstrip() for line in console.export_text(styles=styles).split("\n")).rstrip("\n")


def spans(text: Text) -> list[tuple[str, str]]:
    return [(text.plain[s.start : s.end], str(s.style)) for s in text.spans]


def test_inline_markup_becomes_styles() -> None:
    text = inline("a **bold** and *it* with `code`, ~~gone~~ and [docs](https://x.y/z)")
    assert text.plain == "a bold and it with code, gone and docs"
    assert spans(text) == [
        ("bold", "bold"),
        ("it", "italic"),
        ("code", "bold #e5c07b"),
        ("gone", "strike"),
        ("docs", "underline #61afef link https://x.y/z"),
    ]


def test_snake_case_and_lone_stars_stay_as_written() -> None:
    assert inline("call my_func_name with 2 * 3 * 4").plain == "call my_func_name with 2 * 3 * 4"


def test_headings_lists_quotes_and_rules() -> None:
    assert shown("## Install") == "Install"
    assert shown("- one\n- two **2**\n  - nested\n3. three") == " • one\n • two 2\n   • nested\n 3. three"
    assert shown("> quoted words") == "▌ quoted words"
    assert shown("---") == "─" * 40


def test_code_is_indented_and_highlighted() -> None:
    assert shown("```python\ndef f(x):\n    return 1\n```") == "  def f(x):\n      return 1"
    styled = shown("```python\ndef f(x):\n    return 1\n```", styles=True)
    assert "\x1b[1;38;2;198;120;221mdef" in styled  # the keyword's colour
    assert shown("```nosuchlang\nplain text\n```") == "  plain text"
    assert shown("```\nunclosed") == "  unclosed"


def test_tables_are_drawn_as_tables() -> None:
    out = shown("| a | b |\n|---|---|\n| 1 | 2 |")
    assert out.strip("\n").splitlines() == [" a  b", " ────", " 1  2"]
