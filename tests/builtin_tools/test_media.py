"""Read of images (scaled down when large), PDFs (page by page) and notebooks (cells with outputs),
and NotebookEdit, on real files made by the tests."""

from __future__ import annotations

import base64
import difflib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import cast

import nbformat
import pytest
from PIL import Image

from piton.builtin_tools.notebook import NotebookEdit
from piton.builtin_tools.read import Read
from piton.core.conversation.messages import Base64ImageSource, DocumentBlock, ImageBlock, TextBlock
from piton.core.display import FileDiff
from tests.builtin_tools.helpers import call, context, text
from tests.fakes.images import encoded, png
from tests.fakes.pdf import pdf

READ, EDIT = Read(), NotebookEdit()

# nbformat's builders and its read/write are not annotated: their documented types
Notebook = nbformat.NotebookNode
new_notebook = cast(Callable[..., Notebook], nbformat.v4.new_notebook)
new_markdown_cell = cast(Callable[..., Notebook], nbformat.v4.new_markdown_cell)
new_code_cell = cast(Callable[..., Notebook], nbformat.v4.new_code_cell)
new_output = cast(Callable[..., Notebook], nbformat.v4.new_output)
read_notebook = cast(Callable[..., Notebook], nbformat.read)
write_notebook = cast(Callable[..., None], nbformat.write)


def image_of(result_content: object) -> Image.Image:
    assert isinstance(result_content, list)
    [block] = [b for b in result_content if isinstance(b, ImageBlock)]
    assert isinstance(block.source, Base64ImageSource)
    return Image.open(io.BytesIO(base64.b64decode(block.source.data)))


def test_a_large_image_is_scaled_down_and_a_small_one_kept(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(encoded("PNG", 4000, 3000))
    result = call(READ, context(tmp_path), file_path="big.png")
    assert not result.is_error and "scaled from 4000×3000 to 1568×1176" in result.summary
    assert image_of(result.content).size == (1568, 1176)
    (tmp_path / "small.png").write_bytes(png())
    kept = call(READ, context(tmp_path), file_path="small.png")
    assert "scaled" not in kept.summary and image_of(kept.content).size == (2, 2)


def test_a_broken_image_or_a_decompression_bomb_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    result = call(READ, context(tmp_path), file_path="broken.png")
    assert result.is_error and "cannot be decoded" in text(result)
    huge = io.BytesIO()
    Image.new("1", (20_000, 20_000)).save(huge, "PNG")  # 400 million pixels, a few kB on disk
    (tmp_path / "bomb.png").write_bytes(huge.getvalue())
    result = call(READ, context(tmp_path), file_path="bomb.png")
    assert result.is_error and ("too large to decode" in text(result) or "cannot be decoded" in text(result))


def test_a_pdf_is_read_page_by_page(tmp_path: Path) -> None:
    (tmp_path / "manual.pdf").write_bytes(pdf([f"Chapter {n}" for n in range(1, 26)]))
    first = call(READ, context(tmp_path), file_path="manual.pdf")
    shown = text(first)
    assert shown.startswith("--- page 1 ---\nChapter 1") and "--- page 10 ---\nChapter 10" in shown
    assert "Chapter 11" not in shown and 'pages="11-25"' in shown and first.summary == "PDF, 10 of 25 pages"
    some = text(call(READ, context(tmp_path), file_path="manual.pdf", pages="3,20-21"))
    assert some == "--- page 3 ---\nChapter 3\n\n--- page 20 ---\nChapter 20\n\n--- page 21 ---\nChapter 21"
    for pages, why in (("30", "has pages 1 to 25"), ("1-25", "at most 20"), ("x", "expected page numbers")):
        result = call(READ, context(tmp_path), file_path="manual.pdf", pages=pages)
        assert result.is_error and why in text(result)
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nnot really")
    result = call(READ, context(tmp_path), file_path="broken.pdf")
    assert result.is_error and "cannot be read" in text(result)


def test_a_short_pdf_goes_to_a_model_that_reads_documents_as_one(tmp_path: Path) -> None:
    """Whole, as the file's bytes, where the model reads PDFs; as text otherwise, when pages are
    named, when it is long, or when it parses only with repairs (the API might refuse it, and a
    refused document would fail every later request)."""
    data = pdf(["Summary", "Figures", "Appendix"])
    (tmp_path / "report.pdf").write_bytes(data)
    ctx = context(tmp_path)
    ctx.reads_documents = lambda: True
    result = call(READ, ctx, file_path="report.pdf")
    assert isinstance(result.content, list) and result.summary == "PDF, 3 pages, as a document"
    note, document = result.content
    assert isinstance(note, TextBlock) and "3 pages" in note.text
    assert isinstance(document, DocumentBlock) and base64.b64decode(document.source.data) == data
    assert document.title == "report.pdf"

    assert text(call(READ, context(tmp_path), file_path="report.pdf")).startswith("--- page 1 ---")
    ctx.reads_documents = lambda: False  # a model that does not read PDFs
    assert text(call(READ, ctx, file_path="report.pdf")).startswith("--- page 1 ---")
    ctx.reads_documents = lambda: True
    assert text(call(READ, ctx, file_path="report.pdf", pages="2")) == "--- page 2 ---\nFigures"
    (tmp_path / "long.pdf").write_bytes(pdf([f"Chapter {n}" for n in range(1, 13)]))
    assert call(READ, ctx, file_path="long.pdf").summary == "PDF, 10 of 12 pages"
    repaired = data.replace(b"startxref\n", b"startxref\n9") if b"startxref\n" in data else b""
    assert repaired, "the fixture PDF has a startxref line"
    (tmp_path / "repaired.pdf").write_bytes(repaired)
    result = call(READ, ctx, file_path="repaired.pdf")
    assert isinstance(result.content, str) and "Summary" in result.content


def notebook(path: Path, minor: int = 5) -> Notebook:
    nb = new_notebook()
    nb.nbformat_minor = minor
    chart = base64.b64encode(encoded("PNG", 40, 30)).decode()
    nb.cells = [
        new_markdown_cell("# Sales"),
        new_code_cell(
            "total = 2 + 2\nprint(total)",
            execution_count=1,
            outputs=[new_output("stream", name="stdout", text="4\n")],
        ),
        new_code_cell(
            "plot()",
            execution_count=2,
            outputs=[new_output("display_data", data={"image/png": chart, "text/plain": "<Figure>"})],
        ),
        new_code_cell(
            "1/0",
            outputs=[
                new_output(
                    "error",
                    ename="ZeroDivisionError",
                    evalue="division by zero",
                    traceback=["\x1b[31mZeroDivisionError\x1b[0m: division by zero"],
                )
            ],
        ),
    ]
    if minor < 5:
        for cell in nb.cells:
            cell.pop("id", None)
    write_notebook(nb, str(path))
    return nb


def test_a_notebook_reads_as_cells_with_outputs_and_images(tmp_path: Path) -> None:
    nb = notebook(tmp_path / "sales.ipynb")
    result = call(READ, context(tmp_path), file_path="sales.ipynb")
    assert isinstance(result.content, list) and result.summary == "notebook"
    [shown] = [b.text for b in result.content if isinstance(b, TextBlock)]
    first_id = nb.cells[0].id
    assert f'<cell id="{first_id}" type="markdown">\n# Sales\n</cell>' in shown
    assert "total = 2 + 2\nprint(total)\n</cell>\n<output>\n4\n</output>" in shown
    assert "[image 1, below]" in shown and "ZeroDivisionError: division by zero" in shown
    assert "\x1b" not in shown
    assert image_of(result.content).size == (40, 30)


def test_notebook_edit_replaces_inserts_and_deletes_keeping_the_rest_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "sales.ipynb"
    nb = notebook(path)
    original = path.read_bytes()
    ctx = context(tmp_path)
    code_id = nb.cells[1].id
    refused = call(EDIT, ctx, notebook_path="sales.ipynb", cell_id=code_id, new_source="x")
    assert refused.is_error and "Read" in text(refused)  # read it first, as Edit asks
    call(READ, ctx, file_path="sales.ipynb")
    same = call(EDIT, ctx, notebook_path="sales.ipynb", cell_id=nb.cells[0].id, new_source="# Sales")
    assert not same.is_error and path.read_bytes() == original  # the same source: the same bytes

    done = call(
        EDIT, ctx, notebook_path="sales.ipynb", cell_id=code_id, new_source="total = 3 + 3\nprint(total)"
    )
    assert not done.is_error and isinstance(done.display, FileDiff) and "+total = 3 + 3" in done.display.diff
    assert done.data is not None  # what a client is told, as Claude Code tells it
    told = {k: done.data[k] for k in ("new_source", "cell_type", "language", "edit_mode", "cell_id", "error")}
    assert told == {
        "new_source": "total = 3 + 3\nprint(total)",
        "cell_type": "code",
        "language": "python",
        "edit_mode": "replace",
        "cell_id": code_id,
        "error": "",
    }
    assert done.data["updated_file"] == path.read_text().rstrip("\n") and done.data["old_source"]
    after = read_notebook(str(path), as_version=4)
    assert after.cells[1].source == "total = 3 + 3\nprint(total)" and after.cells[1].outputs == []
    assert after.cells[1].execution_count is None and after.cells[2].outputs  # the other cells are untouched
    diff = difflib.unified_diff(
        original.decode().splitlines(), path.read_text().splitlines(), n=0, lineterm=""
    )
    changed = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert 0 < len(changed) <= 20, changed  # only the edited cell's lines: its source, outputs and count

    call(
        EDIT,
        ctx,
        notebook_path="sales.ipynb",
        cell_id=code_id,
        new_source="## Notes",
        cell_type="markdown",
        edit_mode="insert",
    )
    call(
        EDIT, ctx, notebook_path="sales.ipynb", new_source="import math", cell_type="code", edit_mode="insert"
    )
    call(EDIT, ctx, notebook_path="sales.ipynb", cell_id=nb.cells[3].id, new_source="", edit_mode="delete")
    final = read_notebook(str(path), as_version=4)
    nbformat.validate(final)
    assert [c.source for c in final.cells] == [
        "import math",
        "# Sales",
        "total = 3 + 3\nprint(total)",
        "## Notes",
        "plot()",
    ]
    assert final.cells[1].id == nb.cells[0].id and len({c.id for c in final.cells}) == 5
    missing = call(EDIT, ctx, notebook_path="sales.ipynb", cell_id="nope", new_source="x")
    assert missing.is_error and "No cell 'nope'" in text(missing) and nb.cells[0].id in text(missing)


def test_a_notebook_edit_that_names_no_cell_or_type_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "sales.ipynb"
    nb = notebook(path)
    original = path.read_bytes()
    ctx = context(tmp_path)
    call(READ, ctx, file_path="sales.ipynb")
    for given, said in [
        ({"edit_mode": "delete"}, "Name the cell to delete with cell_id."),
        ({"edit_mode": "replace"}, "Name the cell to replace with cell_id."),
        (
            {"edit_mode": "insert", "cell_id": nb.cells[0].id},
            "Give cell_type (code or markdown) for the new cell.",
        ),
    ]:
        refused = call(EDIT, ctx, notebook_path="sales.ipynb", new_source="x", **given)
        assert refused.is_error and text(refused) == said
    assert path.read_bytes() == original
    retyped = call(
        EDIT, ctx, notebook_path="sales.ipynb", cell_id=nb.cells[1].id, new_source="# T", cell_type="markdown"
    )
    after = read_notebook(str(path), as_version=4)
    assert (
        not retyped.is_error
        and after.cells[1].cell_type == "markdown"
        and after.cells[1].id == nb.cells[1].id
    )


def test_a_notebook_without_cell_ids_is_edited_by_position_and_gets_none(tmp_path: Path) -> None:
    path = tmp_path / "old.ipynb"
    notebook(path, minor=4)
    ctx = context(tmp_path)
    result = call(READ, ctx, file_path="old.ipynb")
    assert isinstance(result.content, list) and isinstance(result.content[0], TextBlock)
    assert '<cell id="cell-1" type="code"' in result.content[0].text
    call(EDIT, ctx, notebook_path="old.ipynb", cell_id="cell-1", new_source="print(5)")
    call(
        EDIT,
        ctx,
        notebook_path="old.ipynb",
        cell_id="cell-0",
        new_source="x = 1",
        cell_type="code",
        edit_mode="insert",
    )
    data = json.loads(path.read_text())
    assert data["nbformat_minor"] == 4 and all("id" not in c for c in data["cells"])
    assert ["".join(c["source"]) for c in data["cells"]][:3] == ["# Sales", "x = 1", "print(5)"]


def test_notebook_edit_stays_inside_the_writable_folders(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    notebook(outside / "n.ipynb")
    project = tmp_path / "project"
    project.mkdir()
    result = call(
        EDIT, context(project), notebook_path=str(outside / "n.ipynb"), cell_id="cell-0", new_source="x"
    )
    assert result.is_error and "outside the writable directories" in text(result)
    (project / "notes.txt").write_text("x")
    result = call(EDIT, context(project), notebook_path="notes.txt", new_source="x")
    assert result.is_error and "not a notebook" in text(result)


@pytest.mark.parametrize("bad", [b"{}", b"not json", b'{"cells": 3}'])
def test_a_broken_notebook_reads_as_an_error_that_says_how_to_read_it(tmp_path: Path, bad: bytes) -> None:
    (tmp_path / "b.ipynb").write_bytes(bad)
    result = call(READ, context(tmp_path), file_path="b.ipynb")
    assert result.is_error and "not a Jupyter notebook" in text(result) and "offset and limit" in text(result)


def test_mentioned_pdfs_and_large_images_are_attached_as_the_model_can_take_them(tmp_path: Path) -> None:
    from piton.builtin_tools.mentions import attach

    (tmp_path / "manual.pdf").write_bytes(pdf([f"Chapter {n}" for n in range(1, 31)]))
    (tmp_path / "shot.png").write_bytes(encoded("PNG", 3000, 1000))
    warnings: list[str] = []
    content = attach(context(tmp_path), "see @manual.pdf and @shot.png", warnings.append)
    assert isinstance(content, list) and warnings == []
    assert isinstance(content[1], TextBlock), content[1]
    pdf_text = content[1].text
    assert "--- page 20 ---\nChapter 20" in pdf_text and "Chapter 21" not in pdf_text
    assert "[10 more pages: Read the file with pages for the rest]" in pdf_text
    assert image_of(content[2:]).size == (1568, 523)


def test_a_notebook_in_another_tools_format_keeps_its_format(tmp_path: Path) -> None:
    # two-space indentation, keys not sorted, sources as strings: as some editors write them
    cells = [
        {"cell_type": "markdown", "source": "# Title", "metadata": {}, "id": "aa"},
        {
            "source": "x = 1",
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "id": "bb",
        },
        {"cell_type": "markdown", "metadata": {}, "source": "é ünïcode", "id": "cc"},
    ]
    data = {"metadata": {}, "nbformat": 4, "nbformat_minor": 5, "cells": cells}
    original = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path = tmp_path / "other.ipynb"
    path.write_text(original)
    ctx = context(tmp_path)
    call(READ, ctx, file_path="other.ipynb")
    result = call(EDIT, ctx, notebook_path="other.ipynb", cell_id="bb", new_source="x = 2")
    assert not result.is_error, text(result)
    expected = original.replace('"source": "x = 1"', '"source": "x = 2"')
    assert path.read_text() == expected  # one line changed, nothing else moved


def test_sixteen_bit_images_keep_their_contrast_and_types_come_from_the_bytes(tmp_path: Path) -> None:
    from piton.builtin_tools.media import ImageError, fit_image

    depth = Image.new("I;16", (2000, 1000))
    depth.paste(40000, (0, 0, 1000, 1000))  # left half bright, right half black
    out = io.BytesIO()
    depth.save(out, "PNG")
    data, _, note = fit_image(out.getvalue(), "image/png")
    scaled = Image.open(io.BytesIO(data)).convert("L")
    assert note and scaled.getpixel((10, 10)) != scaled.getpixel((scaled.width - 10, 10))
    jpeg = encoded("JPEG")
    assert fit_image(jpeg, "image/png")[1] == "image/jpeg"  # a notebook output that says png but is not
    with pytest.raises(ImageError, match="cannot be decoded"):
        fit_image(encoded("PNG", 400, 300, "RGBA")[:200], "image/png")  # cut short
