"""Rendering one finished Markdown block for the terminal, fast.

Rich's Markdown builds a new parser for every call and highlights code through a heavy path: fine
for one document, too slow for an answer rendered block by block as it streams. Paragraphs,
headings, lists, quotes, rules and code are drawn here directly as Rich Text (code highlighted by
pygments with a cached lexer); tables, the rare case, still go to Rich's Markdown.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from rich.console import RenderableType
from rich.text import Text

_INLINE = re.compile(
    r"(?P<code>`+)(?P<code_text>.+?)(?P=code)"
    r"|\*\*(?P<bold>.+?)\*\*|__(?P<bold2>.+?)__"
    r"|(?<![\w*])\*(?P<italic>[^*\s](?:.*?[^*\s])?)\*(?![\w*])"
    r"|(?<![\w_])_(?P<italic2>[^_\s](?:.*?[^_\s])?)_(?![\w_])"
    r"|~~(?P<strike>.+?)~~"
    r"|\[(?P<link>[^\]]+)\]\((?P<url>[^)\s]+)\)"
)
_LIST = re.compile(r"^(?P<indent>\s*)(?P<marker>[-*+]|\d+[.)])\s+(?P<body>.*)$")
_HEADING = re.compile(r"^\s{0,3}(?P<level>#{1,6})\s+(?P<body>.*?)\s*#*\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_TOKEN_STYLES = (  # pygments token type prefix -> style, most specific first
    ("Token.Comment", "italic #7f8c8d"),
    ("Token.Literal.String", "#98c379"),
    ("Token.Literal.Number", "#d19a66"),
    ("Token.Keyword", "bold #c678dd"),
    ("Token.Name.Function", "#61afef"),
    ("Token.Name.Class", "bold #e5c07b"),
    ("Token.Name.Builtin", "#56b6c2"),
    ("Token.Name.Decorator", "#e5c07b"),
    ("Token.Operator", "#56b6c2"),
)


def inline(text: str, base: str = "") -> Text:
    """A line of Markdown's inline syntax as styled text."""
    out = Text(style=base)
    position = 0
    for m in _INLINE.finditer(text):
        out.append(text[position : m.start()])
        if m.group("code"):
            out.append(m.group("code_text").strip(), style="bold #e5c07b")
        elif m.group("bold") or m.group("bold2"):
            out.append_text(inline(m.group("bold") or m.group("bold2"), "bold"))
        elif m.group("italic") or m.group("italic2"):
            out.append_text(inline(m.group("italic") or m.group("italic2"), "italic"))
        elif m.group("strike"):
            out.append(m.group("strike"), style="strike")
        else:
            out.append(m.group("link"), style=f"underline #61afef link {m.group('url')}")
        position = m.end()
    out.append(text[position:])
    return out


@cache
def _lexer(language: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language or "text")
    except ClassNotFound:
        return None


@cache
def _token_style(token: Any) -> str:
    name = str(token)
    return next((style for prefix, style in _TOKEN_STYLES if name.startswith(prefix)), "")


def code(body: str, language: str) -> Text:
    lexer = _lexer(language.strip().split()[0] if language.strip() else "")
    out = Text(no_wrap=False)
    if lexer is None:
        out.append(body, style="#abb2bf")
    else:
        for token, value in lexer.get_tokens(body):
            out.append(value, style=_token_style(token))
        out.rstrip()
    return Text("\n").join(Text("  ") + line for line in out.split("\n"))


def render_block(block: str) -> RenderableType:
    """One finished block (as `MarkdownStream` splits them) as something the console can print."""
    lines = block.split("\n")
    first = lines[0].lstrip()
    if first.startswith(("```", "~~~")):
        fence = first[:3]
        body = lines[1:-1] if len(lines) > 1 and lines[-1].strip().startswith(fence) else lines[1:]
        return code("\n".join(body), first.lstrip("`~"))
    heading = _HEADING.match(lines[0])
    if heading and len(lines) == 1:
        level = len(heading.group("level"))
        style = "bold underline" if level == 1 else "bold"
        return inline(heading.group("body"), style)
    if len(lines) > 1 and _TABLE_SEPARATOR.match(lines[1]) and "|" in lines[0]:
        from rich.markdown import Markdown

        return Markdown(block)
    if _RULE.match(block):
        return Text("─" * 40, style="dim")
    out = Text()
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        item = _LIST.match(line)
        if item:
            marker = item.group("marker")
            bullet = "•" if marker in "-*+" else marker
            out.append(f"{item.group('indent')} {bullet} ", style="bold")
            out.append_text(inline(item.group("body")))
        elif line.lstrip().startswith(">"):
            out.append("▌ ", style="dim")
            out.append_text(inline(line.lstrip()[1:].lstrip(), "italic dim"))
        else:
            out.append_text(inline(line))
    return out
