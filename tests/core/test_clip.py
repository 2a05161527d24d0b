from __future__ import annotations

from piton.core.clip import one_line


def test_short_text_is_kept_on_one_line() -> None:
    assert one_line("Greets  people\nby name.", 80) == "Greets people by name."


def test_long_text_is_cut_at_a_word_and_marked() -> None:
    text = "Reviews the staged changes for bugs, style problems and missing tests before a commit"
    cut = one_line(text, 40)
    assert cut == "Reviews the staged changes for bugs…"
    assert len(cut) <= 40 and text.startswith(cut[:-1])


def test_a_word_longer_than_the_room_is_cut_inside_it() -> None:
    path = "/home/ada/projects/" + "x" * 80
    cut = one_line(path, 30)
    assert len(cut) == 30 and cut.endswith("…") and path.startswith(cut[:-1])
