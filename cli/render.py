"""Showing a run in the terminal: streamed answers and code blocks, thinking, and the live area (the
lines of tool calls are `render_tools`').

Finished output goes to the console once, into the normal scrollback. What is still streaming (the
unfinished Markdown block, the latest thinking lines, a spinner) is the live area, which the prompt
redraws at a capped rate; it is bounded, so a long answer never costs more than its length.
"""

from __future__ import annotations

import time

from rich.console import Console, Group, RenderableType
from rich.text import Text

from piton.cli.markdown_render import (
    CODE_CONTEXT_CHARS,
    CODE_CONTEXT_LINES,
    code_block,
    code_rows,
    fence_info,
    render_block,
    settled,
)
from piton.cli.markdown_stream import MarkdownStream
from piton.cli.output import compacted_line, hook_line, tool_label
from piton.cli.render_thinking import LiveText, Thinking, last_rows
from piton.cli.render_tools import CONTROL, ToolLines
from piton.core.conversation.events import (
    AgentEvent,
    Compacted,
    Compacting,
    HookResponse,
    MessageDone,
    Notice,
    Result,
    StreamRetry,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolResultsMessage,
    ToolStarted,
    ToolUseStart,
)
from piton.core.providers.waits import say_seconds

LIVE_LINES = 12  # the most lines the live area shows of an unfinished block
CODE_BATCH_S = 0.1  # how often lines of a streaming code block are printed
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def retry_text(event: StreamRetry) -> str:
    """`529 overloaded_error: asking again in 2 s (attempt 2/5)`."""
    reason = CONTROL.sub("", event.reason) or "the request failed"
    return (
        f"{reason[0].upper()}{reason[1:]}: asking again in {say_seconds(event.delay_s)} "
        f"(attempt {event.attempt + 1}/{event.max_attempts})"
    )


def _fragments(text: Text) -> LiveText:
    """Rich text as prompt_toolkit fragments (the styles Piton uses read the same in both)."""
    plain = text.plain
    out: LiveText = []
    position = 0
    for span in sorted(text.spans, key=lambda span: span.start):
        if span.start > position:
            out.append(("class:live", plain[position : span.start]))
        out.append((str(span.style), plain[max(span.start, position) : span.end]))
        position = max(position, span.end)
    if position < len(plain):
        out.append(("class:live", plain[position:]))
    return out


class Renderer:
    """A run's events on screen: printed once into the scrollback when finished, drawn in the live
    area while they stream."""

    def __init__(
        self, console: Console, *, verbose: bool = False, code_batch_s: float = CODE_BATCH_S
    ) -> None:
        self.console = console
        self.verbose = verbose
        self.code_batch_s = code_batch_s  # how often lines of a streaming code block are printed
        self._md = MarkdownStream()
        self._code_printed = 0  # body lines of the open code block already in the scrollback
        self._code_batch_at = 0.0
        self._code_block = 0  # which code block the live area's cache belongs to
        self._code_marks = [0]  # where batches of the open block ended: no comment or string open there
        self._code_live_key: tuple[int, int, str, int, int] | None = None
        self._code_live_rows: LiveText = []
        self._thinking = Thinking()
        self._busy_since = 0.0
        self._streamed_chars = 0
        self._tool: str | None = None  # the tool call being streamed, if any
        self.tools = ToolLines(console)
        self._compacting = False
        self._blocks_printed = 0  # in the current reply
        self.active = False
        self.doing: str | None = None  # what the spinner says instead of what the events show

    @property
    def shown_diffs(self) -> set[str]:
        """Diffs a permission question showed: not shown again when the call finishes."""
        return self.tools.shown_diffs

    # -- the run's lifecycle -----------------------------------------------------------------------
    def begin(self, doing: str | None = None) -> None:
        self.active = True
        self.doing = doing
        self._busy_since = time.monotonic()
        self._streamed_chars = 0

    def end(self) -> None:
        self._flush_thinking()
        self._flush_text()
        self.tools.reset()
        self.active = False
        self._compacting = False
        self._tool = None
        self.doing = None

    def interrupted(self) -> None:
        self.end()
        self.console.print(Text("  ⎿  Interrupted · what should Piton do instead?", style="yellow"))

    # -- events ------------------------------------------------------------------------------------
    def handle(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            self._thinking.close(self.verbose)  # printed with the first words that reach the scrollback
            self._streamed_chars += len(event.text)
            for block in self._md.feed(event.text):
                self._print_markdown(block)
            self._print_code_lines()
        elif isinstance(event, ThinkingDelta):
            self._thinking.add(event.thinking)
        elif isinstance(event, ToolUseStart):
            self._flush_thinking()
            self._flush_text()
            self._tool = event.name
        elif isinstance(event, MessageDone):
            self._flush_thinking()
            self._flush_text()
            self._tool = None
            self._blocks_printed = 0
        elif isinstance(event, ToolStarted):
            self._flush_thinking()
            self._tool = event.name
            self.tools.started(event)
        elif isinstance(event, ToolFinished):
            self.tools.finished(event)
        elif isinstance(event, StreamRetry):
            # the void reply's unfinished parts are dropped, not printed (what reached the scrollback
            # stays, under this line)
            self._thinking.drop()
            self._md = MarkdownStream()
            self._code_printed = 0
            self._code_block += 1
            self._tool = None
            self.console.print(Text(f"  ⎿  {retry_text(event)}", style="yellow"))
        elif isinstance(event, Notice) and event.level == "info":
            self.console.print(Text(f"  ⎿  {CONTROL.sub('', event.text)}", style="dim"))
        elif isinstance(event, Notice):
            self._compacting = False
            self.console.print(Text(f"  {event.text}", style="yellow"))
        elif isinstance(event, Compacting):
            self._flush_thinking()
            self._flush_text()
            self._compacting = True
        elif isinstance(event, Compacted):
            self._compacting = False
            self.console.print(Text(f"✻ {compacted_line(event).capitalize()}", style="dim"))
        elif isinstance(event, SubagentEvent):
            self._subagent(event)
        elif isinstance(event, HookResponse):
            if self.verbose or event.outcome != "success":  # a hook that blocked or failed is always told
                style = "dim" if event.outcome == "success" else "yellow"
                self.console.print(Text(f"  ⎿  {hook_line(event)}", style=style))
        elif isinstance(event, Result) and event.is_error:
            self.console.print(Text(f"  ⎿  {event.result}", style="bold red"))
        elif isinstance(event, ToolResultsMessage | Result):
            self._tool = None

    def _subagent(self, event: SubagentEvent) -> None:
        """A subagent's tool calls, nested under its Task line; its text stays in its own transcript."""
        inner = event.event
        if isinstance(inner, StreamRetry):  # the Task call waits on it: say so, as for our own
            self.console.print(Text(f"  ⎿  Subagent: {retry_text(inner)}", style="yellow"))
        elif isinstance(inner, ToolStarted):
            self._flush_thinking()
            self._flush_text()
            label = CONTROL.sub("", tool_label(inner.name, inner.input))
            self.console.print(Text(f"  ⎿  {label}", style="dim"))
        elif isinstance(inner, ToolFinished) and inner.result.is_error:
            summary = CONTROL.sub("", inner.result.summary or "error")
            self.console.print(Text(f"       ⎿  {summary}", style="red"))

    def _print_markdown(self, block: str) -> None:
        self._flush_thinking()
        block = CONTROL.sub("", block)
        self._code_block += 1  # the live area's cache belongs to the block that is now over
        fenced = code_block(block) if self._code_printed else None
        if fenced is not None:  # the rest of a code block whose lines were printed as they came
            rows = self._code_rows(fenced[1], fenced[0], self._code_printed, len(fenced[1]))
            self._code_printed = 0
            while rows and not rows[-1].plain.strip():
                rows.pop()
            if rows:
                self.console.print(Text("\n").join(rows))
            return
        self._print_block(render_block(block))

    def _print_block(self, rendered: RenderableType) -> None:
        if self._blocks_printed:  # blocks are rendered one by one; keep the blank line between them
            rendered = Text("\n") + rendered if isinstance(rendered, Text) else Group(Text(), rendered)
        self._blocks_printed += 1
        self.console.print(rendered)

    def _print_code_lines(self) -> None:
        """A code block goes to the scrollback as it streams, highlighted as it will stay: nothing
        jumps when it ends, and a long block is all there to read while it streams. Lines are
        printed in batches, at most every `code_batch_s`, as each batch lexes its context again."""
        opened = self._md.open_code
        now = time.monotonic()
        if opened is None or now - self._code_batch_at < self.code_batch_s:
            return
        done, end = self._code_printed, len(opened[1])
        while end > done and not opened[1][end - 1].strip():
            end -= 1  # blank lines wait for what follows: at the block's end they are dropped
        end = settled(opened[1], done, end, fence_info(opened[0]))
        if end <= done:
            return
        if not done:
            self._code_marks = [0]
        self._flush_thinking()
        rows = self._code_rows(opened[1], fence_info(opened[0]), done, end)
        self._code_printed, self._code_batch_at = end, now
        self._code_marks.append(end)
        if not done:
            self._print_block(Text("\n").join(rows))
        else:
            self.console.print(Text("\n").join(rows))

    def _code_rows(
        self, lines: list[str], language: str, start: int, end: int, partial: str | None = None
    ) -> list[Text]:
        """Rows `start` to `end` of a code block (and `partial` after them), lexed with the lines
        before them from a point where no comment or string was open (where an earlier batch
        ended), within `CODE_CONTEXT_LINES` and `CODE_CONTEXT_CHARS`."""
        marks = [m for m in self._code_marks if m <= start] or [0]
        low = marks[-1]
        for mark in reversed(marks):
            if (
                start - mark > CODE_CONTEXT_LINES
                or sum(len(x) + 1 for x in lines[mark:start]) > CODE_CONTEXT_CHARS
            ):
                break
            low = mark
        window = [CONTROL.sub("", line) for line in lines[low:end]]  # only the lines lexed again
        if partial is not None:
            window.append(partial)
        return code_rows(window, language, start - low)

    def _flush_text(self) -> None:
        for block in self._md.flush():
            self._print_markdown(block)

    def _flush_thinking(self) -> None:
        self._thinking.print(self.console, self.verbose)

    # -- the live area -----------------------------------------------------------------------------
    def live(self) -> LiveText:
        """What to draw above the prompt now: the streaming tail and a spinner line."""
        if not self.active:
            return []
        out: LiveText = []
        width = max(self.console.width - 1, 10)  # the last column would wrap on some terminals
        out += self._thinking.live(width)
        out += self._code_live(width) if self._md.open_code is not None else self._tail(width)
        out.append(("class:spinner", self._spinner_line(width) + "\n"))
        return out

    def _tail(self, width: int) -> LiveText:
        tail = CONTROL.sub("", self._md.tail)
        if not tail or ("\n" not in tail and tail.lstrip().startswith(("```", "~~~"))):
            return []  # a fence's opening line is never shown: its code will be, line by line
        return [("class:live", f"{row}\n") for row in last_rows(tail, width, LIVE_LINES)]

    def _code_live(self, width: int) -> LiveText:
        """The open code block's lines not yet printed, highlighted as they will be; a closing fence
        is not shown, as it will not be printed."""
        opened = self._md.open_code
        assert opened is not None
        partial = CONTROL.sub("", self._md.partial)
        key = (self._code_block, len(opened[1]), partial, self._code_printed, width)
        if key == self._code_live_key:  # redraws without new text lex nothing
            return self._code_live_rows
        closing = partial.strip().startswith(("```", "~~~"))
        end = len(opened[1])
        start = max(self._code_printed, end - LIVE_LINES)  # no more is drawn
        shown = [*opened[1][start:end], *([] if closing or not partial else [partial])]
        live: LiveText
        if any(len(line.expandtabs()) + 2 > width for line in shown):
            # a line wider than the screen: wrapped plainly, and never lexed (it may be megabytes)
            plain = "\n".join("  " + CONTROL.sub("", line).expandtabs() for line in shown).rstrip()
            live = [("class:live", f"{row}\n") for row in last_rows(plain, width, LIVE_LINES)]
        else:
            rows = self._code_rows(
                opened[1], fence_info(opened[0]), start, end, None if closing or not partial else partial
            )
            while rows and not rows[-1].plain.strip():
                rows.pop()
            for row in rows:
                row.expand_tabs()  # prompt_toolkit would show a tab as ^I
            live = [part for row in rows for part in (*_fragments(row), ("", "\n"))]
        self._code_live_key, self._code_live_rows = key, live
        return live

    def _spinner_line(self, width: int) -> str:
        """One line, whatever the width: on a narrow terminal the hint, then the token count go
        first, and what is under way is cut to fit."""
        elapsed = time.monotonic() - self._busy_since
        frame = _SPINNER[int(elapsed * 10) % len(_SPINNER)]
        doing = CONTROL.sub(
            "",
            self.doing
            if self.doing
            else "Compacting the conversation"
            if self._compacting
            else "Thinking"
            if self._thinking.streaming
            else f"Running {self._tool}"
            if self._tool
            else "Working",
        )
        tokens = self._streamed_chars // 4
        counted = f" · ↓ {tokens:,} tokens" if tokens else ""
        for extra in (f"{counted} · esc to interrupt", counted, ""):
            line = f"{frame} {doing}… ({elapsed:.0f}s{extra})"
            if len(line) <= width:
                return line
        room = max(width - len(line) + len(doing) - 1, 1)
        return f"{frame} {doing[:room]}… ({elapsed:.0f}s)"
