from __future__ import annotations

from pathlib import Path

from piton.core.context.result_store import INLINE_CAP, FileResultStore, ResultCapper, ResultHandle
from piton.core.conversation.messages import Base64ImageSource, ImageBlock, TextBlock
from piton.core.tools import ToolResult

BIG = "".join(f"line {i:06d} " + "x" * 40 + "\n" for i in range(50_000))  # ~2.5 MB


def test_small_results_pass_untouched(tmp_path: Path) -> None:
    capper = ResultCapper(FileResultStore(tmp_path))
    result = ToolResult("x" * INLINE_CAP)
    assert capper.apply("Bash", "t1", result) is result
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_a_large_result_is_stored_whole_and_previewed(tmp_path: Path) -> None:
    stored: list[ResultHandle] = []
    capper = ResultCapper(FileResultStore(tmp_path / "tool-results"), on_store=stored.append)
    capped = capper.apply("Bash", "toolu_9", ToolResult(BIG, is_error=True, summary="exit 1"))
    [handle] = stored
    preview = capped.content
    assert isinstance(preview, str) and len(preview) < INLINE_CAP
    assert preview.startswith("line 000000 ") and preview.endswith("line 049999 " + "x" * 40 + "\n")
    assert f"The whole result is saved as {handle.id} at {handle.path}" in preview
    assert f"Read(file_path='{handle.path}', offset=" in preview
    assert capped.is_error and capped.summary == "exit 1"
    assert Path(handle.path).read_text() == BIG
    assert (handle.tool, handle.size_chars, handle.size_bytes, handle.schema_version) == (
        "Bash",
        len(BIG),
        len(BIG),
        1,
    )
    assert handle.metadata == {"tool_use_id": "toolu_9", "is_error": True}
    assert handle.id.startswith("tr_") and handle.created_at
    assert capper.store.read(handle.id) == BIG


def test_the_preview_note_names_the_first_hidden_line(tmp_path: Path) -> None:
    store = FileResultStore(tmp_path)
    capped = ResultCapper(store).apply("Grep", "t", ToolResult(BIG))
    preview = str(capped.content)
    head_lines = preview.split("\n[...")[0].splitlines()
    first_hidden = len(head_lines) + 1
    assert f"(lines {first_hidden}-" in preview and f"offset={first_hidden}," in preview


def test_one_long_line_is_cut_by_characters(tmp_path: Path) -> None:
    blob = "y" * 1_000_000
    capped = ResultCapper(FileResultStore(tmp_path)).apply("Read", "t", ToolResult(blob))
    assert len(str(capped.content)) < INLINE_CAP and str(capped.content).startswith("y" * 1000)


def test_text_beside_images_is_capped_and_the_images_kept(tmp_path: Path) -> None:
    image = ImageBlock(source=Base64ImageSource(media_type="image/png", data="AAAA"))
    capped = ResultCapper(FileResultStore(tmp_path)).apply(
        "Read", "t", ToolResult([TextBlock(text=BIG), image])
    )
    assert isinstance(capped.content, list)
    text, kept = capped.content
    assert isinstance(text, TextBlock) and len(text.text) < INLINE_CAP and kept == image


def test_handles_are_unguessable_and_reads_stay_in_the_store(tmp_path: Path) -> None:
    store = FileResultStore(tmp_path)
    a, b = store.put("Bash", "one", {}), store.put("Bash", "two", {})
    assert a.id != b.id
    for bad in ("../secret", "tr_../../x", "x"):
        try:
            store.read(bad)
        except KeyError:
            continue
        raise AssertionError(f"{bad} was read")


def test_a_result_that_cannot_be_saved_is_previewed_and_the_run_goes_on(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder should be")
    heard: list[ResultHandle] = []
    capper = ResultCapper(FileResultStore(blocker / "results"), on_store=heard.append)
    text = "".join(f"line {i}\n" for i in range(20_000))
    capped = capper.apply("Bash", "toolu_1", ToolResult(text))
    assert isinstance(capped.content, str) and len(capped.content) < INLINE_CAP
    assert capped.content.startswith("line 0\n") and capped.content.endswith("line 19999\n")
    assert "could not be saved (Not a directory)" in capped.content and heard == []
