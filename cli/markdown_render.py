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
CODE_CONTEXT_LINES = 100  # lexed before the rows of a code block being printed, for multi-line strings
CODE_CONTEXT_CHARS = 8_000  # and no more than this: lexing runs on every batch and redraw


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

    try:  # leading blank lines kept: rows lexed in windows must stay aligned with the body's lines
        return get_lexer_by_name(language or "text", stripnl=False)
    except ClassNotFound:
        return None


@cache
def _token_style(token: Any) -> str:
    name = str(token)
    return next((style for prefix, style in _TOKEN_STYLES if name.startswith(prefix)), "")


def code_rows(body: list[str], language: str, start: int = 0) -> list[Text]:
    """The highlighted rows of `body[start:]`, as printed under the answer. They are lexed with up to
    `CODE_CONTEXT_LINES` lines before them, so a string or comment opened there colours them right while
    the cost of a block printed line by line as it streams stays linear."""
    lexer = _lexer(language.strip().split()[0] if language.strip() else "")
    first = max(0, start - CODE_CONTEXT_LINES)
    if lexer is None:
        rows = [Text(line, style="#abb2bf") for line in body[start:]]
    else:
        out = Text(no_wrap=False)
        for token, value in lexer.get_tokens("\n".join(body[first:])):
            out.append(value, style=_token_style(token))
        rows = out.split("\n", allow_blank=True)[: len(body) - first][start - first :]
        rows += [Text() for _ in range(len(body) - start - len(rows))]
    for row in rows:
        row.rstrip()
    return [Text("  ") + row for row in rows]


_OPENERS = {  # constructs that span lines, by language: (opener, closer)
    **dict.fromkeys(
        (
            "c",
            "cpp",
            "c++",
            "cs",
            "csharp",
            "css",
            "scss",
            "less",
            "dart",
            "go",
            "java",
            "javascript",
            "js",
            "jsx",
            "kotlin",
            "php",
            "rust",
            "scala",
            "sql",
            "swift",
            "ts",
            "tsx",
            "typescript",
        ),
        (("/*", "*/"),),
    ),
    **dict.fromkeys(("html", "xml", "svg", "vue", "markdown", "md"), (("<!--", "-->"),)),
    **dict.fromkeys(("python", "py", "python3", "toml"), (('"""', '"""'), ("'''", "'''"))),
}


def settled(body: list[str], start: int, end: int, language: str) -> int:
    """How far from `start` the lines up to `end` can be printed for good: not past a line where a
    comment, a string or a nested fence opened and has not closed yet. Lexed without its closer, the
    rows after it would be coloured as code, and stay so in the scrollback."""
    pairs = _OPENERS.get(language.strip().split()[0].lower() if language.strip() else "", ())
    fenced = language.strip().lower().startswith(("markdown", "md"))
    if not pairs and not fenced:
        return end
    closer: str | None = None
    good = start
    for index in range(start, end):
        line = body[index]
        if fenced and line.lstrip().startswith(("```", "~~~")):
            closer = None if closer == "fence" else "fence" if closer is None else closer
        elif closer != "fence":
            position = 0
            while True:
                if closer is None:
                    found = [(line.find(o, position), o, c) for o, c in pairs if line.find(o, position) >= 0]
                    if not found:
                        break
                    at, opener, closer = min(found)
                    position = at + len(opener)
                else:
                    at = line.find(closer, position)
                    if at < 0:
                        break
                    position, closer = at + len(closer), None
        if closer is None:
            good = index + 1
    return good


def code(body: str, language: str) -> Text:
    rows = code_rows(body.split("\n"), language)
    while rows and not rows[-1].plain.strip():
        rows.pop()
    return Text("\n").join(rows)


def fence_info(line: str) -> str:
    """The language of a fence's opening line."""
    return line.lstrip().lstrip("`~")


def code_block(block: str) -> tuple[str, list[str]] | None:
    """A fenced block's language and body lines (its closing fence may be missing), or None."""
    lines = block.split("\n")
    first = lines[0].lstrip()
    if not first.startswith(("```", "~~~")):
        return None
    closed = len(lines) > 1 and lines[-1].strip().startswith(first[:3])
    return fence_info(first), lines[1:-1] if closed else lines[1:]


def render_block(block: str) -> RenderableType:
    """One finished block (as `MarkdownStream` splits them) as something the console can print."""
    fenced = code_block(block)
    if fenced is not None:
        return code("\n".join(fenced[1]), fenced[0])
    lines = block.split("\n")
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
