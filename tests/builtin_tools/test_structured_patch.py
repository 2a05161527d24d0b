"""A file change as Claude Code reports it to clients (`structuredPatch`, `originalFile`)."""

from __future__ import annotations

from piton.builtin_tools.diffs import PATCHED_FILE_CHARS, file_change, hunks, unified_diff


def test_hunks_carry_their_places_and_three_lines_of_context() -> None:
    before = "".join(f"{n}\n" for n in range(1, 21))
    after = before.replace("2\n", "two\n", 1).replace("18\n", "eighteen\n")
    assert hunks(unified_diff(("a/n", "b/n"), before, after)) == [
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
    assert hunks(unified_diff(("a/n", "b/n"), before, before)) == []
    assert hunks(unified_diff(("a/n", "b/n"), "a", "b")) == [  # the diff's own notes are left out
        {"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": ["-a", "+b"]}
    ]


def test_a_file_past_a_mebibyte_is_reported_without_its_text_but_with_its_hunks() -> None:
    big = "x\n" * (PATCHED_FILE_CHARS // 2 + 1)
    shown = "--- a/big\n+++ b/big\n@@ -1 +1 @@\n-x\n+y\n"
    assert file_change(big, shown) == {
        "originalFile": None,
        "structuredPatch": [
            {"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": ["-x", "+y"]}
        ],
    }
    assert file_change("a\n", shown)["originalFile"] == "a\n"
