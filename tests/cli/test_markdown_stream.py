from __future__ import annotations

from piton.cli.markdown_stream import MarkdownStream

ANSWER = (
    "# Plan\nFirst paragraph,\nstill the first.\n\n- one\n- two\n\n```python\nx = 1\n\ny = 2\n```\nLast words"
)


def stream(text: str, size: int) -> tuple[list[str], MarkdownStream]:
    md = MarkdownStream()
    blocks: list[str] = []
    for i in range(0, len(text), size):
        blocks += md.feed(text[i : i + size])
    return blocks, md


def test_blocks_finish_at_blank_lines_fences_and_headings() -> None:
    blocks, md = stream(ANSWER, 1)
    assert blocks == [
        "# Plan",
        "First paragraph,\nstill the first.",
        "- one\n- two",
        "```python\nx = 1\n\ny = 2\n```",  # a blank line inside a fence does not end the block
    ]
    assert md.tail == "Last words"
    assert md.flush() == ["Last words"]
    assert md.tail == ""


def test_any_delta_size_gives_the_same_blocks() -> None:
    expected, _ = stream(ANSWER, 1)
    for size in (2, 3, 7, 20, len(ANSWER)):
        assert stream(ANSWER, size)[0] == expected


def test_the_tail_is_what_has_not_finished() -> None:
    md = MarkdownStream()
    md.feed("Hello wor")
    assert md.tail == "Hello wor"
    md.feed("ld\nmore")
    assert md.tail == "Hello world\nmore"
    assert md.feed("\n\n") == ["Hello world\nmore"]
    assert md.tail == ""


def test_an_unclosed_fence_is_flushed_as_it_is() -> None:
    md = MarkdownStream()
    assert md.feed("```\ncode\n\nmore code\n") == []
    assert md.flush() == ["```\ncode\n\nmore code"]


def test_tildes_and_longer_fences_close_only_with_their_kind() -> None:
    md = MarkdownStream()
    blocks = md.feed("~~~~\n```\nnot closed\n~~~~\nafter\n\n")
    assert blocks == ["~~~~\n```\nnot closed\n~~~~", "after"]


def test_blank_only_input_makes_no_blocks() -> None:
    md = MarkdownStream()
    assert md.feed("\n\n\n") == []
    assert md.flush() == []
