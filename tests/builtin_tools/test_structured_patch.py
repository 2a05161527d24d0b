"""A file change as Claude Code reports it to clients (`structuredPatch`, `originalFile`)."""

from __future__ import annotations

from piton.builtin_tools.diffs import PATCHED_FILE_CHARS, file_change, structured_patch


def test_hunks_carry_their_places_and_three_lines_of_context() -> None:
    before = "".join(f"{n}\n" for n in range(1, 21))
    after = before.replace("2\n", "two\n", 1).replace("18\n", "eighteen\n")
    assert structured_patch(before, after) == [
        {
            "oldStart": 1,
            "oldLines": 5,
            "newStart": 1,
            "newLines": 5,
            "lines": [" 1", "-2", "+two", " 3", " 4", " 5"],
        },
        {
            "oldStart": 15,
            "oldLines": 6,
            "newStart": 15,
            "newLines": 6,
            "lines": [" 15", " 16", " 17", "-18", "+eighteen", " 19", " 20"],
        },
    ]
    assert structured_patch(before, before) == []


def test_a_file_past_a_mebibyte_is_reported_without_its_text() -> None:
    big = "x\n" * (PATCHED_FILE_CHARS // 2 + 1)
    assert file_change(big, big + "y\n") == {"originalFile": None, "structuredPatch": []}
    assert file_change("a\n", "b\n")["originalFile"] == "a\n"
