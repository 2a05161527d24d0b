"""Jupyter notebooks: Read shows one cell by cell, with outputs (images as images); NotebookEdit
replaces, inserts or deletes a cell (Claude Code's name and input). Edits change the notebook's JSON in
place and write it back with its own indentation and key order, checked against nbformat's schema,
so a cell left alone keeps its bytes and a diff shows only what changed."""

from __future__ import annotations

import base64
import json
import re
import uuid
from typing import Any, Literal

from pydantic import Field

from piton.builtin_tools.diffs import PATCHED_FILE_CHARS, diff_names, unified_diff
from piton.builtin_tools.files import (
    FileTool,
    after_change,
    before_change,
    read_existing,
    remember,
    require_fresh_read,
    writable,
)
from piton.core.conversation.messages import Base64ImageSource, ImageBlock, TextBlock
from piton.core.display import FileDiff
from piton.core.safety import pinned
from piton.core.tools import ResultPart, ToolContext, ToolInput, ToolResult

MAX_OUTPUT_CHARS = 10_000  # of one cell's text outputs, in Read
MAX_IMAGES = 20  # of a notebook's image outputs, in Read
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_INDEX_ID = re.compile(r"^cell-(\d+)$")


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def cell_name(cell: dict[str, Any], index: int) -> str:
    """How a cell is named to the model: its id, or `cell-N` (from 0) in a notebook without ids."""
    cell_id = cell.get("id")
    return cell_id if isinstance(cell_id, str) and cell_id else f"cell-{index}"


def _outputs(cell: dict[str, Any], images: list[ImageBlock]) -> list[str]:
    """A code cell's outputs as text; its images join `images`."""
    from piton.builtin_tools.media import ImageError, fit_image

    shown: list[str] = []
    for output in cell.get("outputs") or []:
        kind = output.get("output_type")
        if kind == "stream":
            shown.append(_text(output.get("text")))
        elif kind == "error":
            trace = "\n".join(_ANSI.sub("", line) for line in output.get("traceback") or [])
            shown.append(trace or f"{output.get('ename')}: {output.get('evalue')}")
        elif kind in ("execute_result", "display_data"):
            data = output.get("data") or {}
            for media in ("image/png", "image/jpeg"):
                if media in data and len(images) < MAX_IMAGES:
                    try:
                        raw, kind_out, _ = fit_image(base64.b64decode(_text(data[media])), media)
                    except (ImageError, ValueError):
                        shown.append(f"[an image ({media}) that could not be decoded]")
                        break
                    source = Base64ImageSource(
                        media_type=kind_out, data=base64.b64encode(raw).decode("ascii")
                    )
                    images.append(ImageBlock(source=source))
                    shown.append(f"[image {len(images)}, below]")
                    break
            else:
                if "text/plain" in data:
                    shown.append(_text(data["text/plain"]))
                elif data:
                    shown.append(f"[output of type {', '.join(sorted(data))}]")
    text = "\n".join(part.rstrip("\n") for part in shown if part)
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n[... {len(text) - MAX_OUTPUT_CHARS:,} more characters of output]"
    return [text] if text else []


def notebook_view(data: bytes) -> list[ResultPart] | str:
    """The notebook as the model reads it: each cell's name, type and source, then its outputs."""
    try:
        notebook = json.loads(data)
        cells = notebook["cells"]
        assert isinstance(cells, list)
    except (ValueError, KeyError, TypeError, AssertionError) as e:
        raise ValueError(f"not a Jupyter notebook ({type(e).__name__}: {e})") from e
    language = ((notebook.get("metadata") or {}).get("language_info") or {}).get("name", "python")
    parts: list[str] = []
    images: list[ImageBlock] = []
    for index, cell in enumerate(cells):
        kind = cell.get("cell_type", "code")
        count = cell.get("execution_count")
        ran = f" · [{count}]" if kind == "code" and count is not None else ""
        parts.append(
            f'<cell id="{cell_name(cell, index)}" type="{kind}"{ran}>\n{_text(cell.get("source"))}\n</cell>'
        )
        if kind == "code":
            parts += [f"<output>\n{text}\n</output>" for text in _outputs(cell, images)]
    header = f"(A Jupyter notebook, {len(cells)} cells, {language}. NotebookEdit changes a cell by its id.)"
    text = "\n".join([header, *parts])
    return [TextBlock(text=text), *images] if images else text


class NotebookEditInput(ToolInput):
    notebook_path: str = Field(description="The .ipynb file: an absolute path, or relative to the project.")
    cell_id: str | None = Field(
        None,
        description="The cell to change, by the id Read shows. To insert, the new cell goes after this one "
        "(at the start when none is given).",
    )
    new_source: str = Field(description="The cell's new source (ignored when deleting).")
    cell_type: Literal["code", "markdown"] | None = Field(
        None, description="The cell's type: required to insert; to replace, changes it."
    )
    edit_mode: Literal["replace", "insert", "delete"] = Field(
        "replace", description="What to do with the cell."
    )


def _nbformat() -> Any:
    """nbformat, which has no type hints, imported when a notebook is edited."""
    import nbformat

    return nbformat


def _indent(text: str) -> int:
    """The indentation the notebook was written with (Jupyter's is 1)."""
    second = text.split("\n", 2)[1] if text.count("\n") >= 1 else ""
    return len(second) - len(second.lstrip(" ")) or 1


class NotebookEdit(FileTool[NotebookEditInput]):
    name = "NotebookEdit"
    description = (
        "Changes one cell of a Jupyter notebook (.ipynb): replace its source (and, with cell_type, its "
        "type), insert a new cell after the one named (or at the start), or delete it. Name cells by "
        "the id Read shows. Read the notebook first. A replaced code cell loses its outputs."
    )
    input_model = NotebookEditInput
    kind = "edit"
    deferred = True  # notebooks are rare: loaded through ToolSearch when tool search is on

    def run_sync(self, args: NotebookEditInput, ctx: ToolContext) -> ToolResult:
        path = writable(ctx, args.notebook_path)
        if path.suffix != ".ipynb":
            return ToolResult.error(f"{path} is not a notebook (.ipynb); use Edit for other files.")
        existing = read_existing(path)
        if existing is None:
            return ToolResult.error(f"{path} does not exist; create a notebook with Write.")
        require_fresh_read(ctx, path, existing[1], "edit")
        text = existing[0].decode("utf-8", errors="surrogateescape")
        try:
            notebook = json.loads(text)
            cells = notebook["cells"]
            assert isinstance(cells, list) and all(isinstance(c, dict) for c in cells)
        except (ValueError, KeyError, TypeError, AssertionError) as e:
            return ToolResult.error(f"{path} cannot be read as a notebook ({type(e).__name__}: {e})")
        was_valid = _valid(notebook)
        index = self._find(cells, args.cell_id)
        if isinstance(index, str):
            return ToolResult.error(index)
        before = "" if index is None or args.edit_mode == "insert" else _text(cells[index].get("source"))
        kind = args.cell_type or (cells[index].get("cell_type") if isinstance(index, int) else None) or "code"
        edited = _edit(notebook, index, args)
        if isinstance(edited, str):
            return ToolResult.error(edited)
        done, after = edited
        if was_valid and not _valid(notebook):
            return ToolResult.error(f"The edit would make {path} an invalid notebook; nothing was written.")
        # the file's own indentation and key order: the cells left alone keep their bytes
        written = json.dumps(notebook, indent=_indent(text), ensure_ascii=False)
        data = (written + ("\n" if text.endswith("\n") else "")).encode("utf-8", errors="surrogateescape")
        before_change(ctx, path, existing)
        try:
            st = pinned.replace(path, data)
        except pinned.PathChanged:
            raise
        except OSError as e:
            return ToolResult.error(f"Cannot write {path}: {e.strerror or e}")
        after_change(ctx, path, data)
        remember(ctx, path, st, edited=True)
        language = notebook.get("metadata", {}).get("language_info", {}).get("name", "python")
        small = max(len(text), len(written)) <= PATCHED_FILE_CHARS  # the files' text up to a mebibyte
        return ToolResult(
            f"{done} of {path}.",
            summary=done.lower(),
            display=FileDiff(str(path), unified_diff(diff_names(path, ctx.cwd), before, after)),
            data={  # Claude Code's `tool_use_result`
                "new_source": args.new_source,
                "old_source": before,
                "cell_type": kind,
                "language": language,
                "edit_mode": args.edit_mode,
                "cell_id": args.cell_id,
                "error": "",
                "notebook_path": str(path),
                "original_file": text if small else None,
                "updated_file": written if small else None,
            },
        )

    @staticmethod
    def _find(cells: list[Any], cell_id: str | None) -> int | str | None:
        """The index of the cell named, None when none is named, or why it cannot be found."""
        if cell_id is None:
            return None
        for index, cell in enumerate(cells):
            if cell.get("id") == cell_id:
                return index
        match = _INDEX_ID.match(cell_id)
        if match is not None and int(match.group(1)) < len(cells):
            return int(match.group(1))
        names = ", ".join(cell_name(c, i) for i, c in enumerate(cells[:20]))
        return f"No cell {cell_id!r} in the notebook; its cells are: {names or 'none'}."


def _edit(notebook: dict[str, Any], index: int | None, args: NotebookEditInput) -> tuple[str, str] | str:
    """Make the edit `args` asks for in `notebook`, on the cell at `index` (None: none named): what
    was done and the cell's new source, or why it cannot be done."""
    cells = notebook["cells"]
    if args.edit_mode == "delete":
        if index is None:
            return "Name the cell to delete with cell_id."
        done = f"Deleted cell {cell_name(cells[index], index)}"
        del cells[index]
        return done, ""
    if args.edit_mode == "insert":
        if args.cell_type is None:
            return "Give cell_type (code or markdown) for the new cell."
        position = 0 if index is None else index + 1
        cells.insert(position, _new_cell(notebook, args.cell_type, args.new_source))
        return f"Inserted cell {cell_name(cells[position], position)}", args.new_source
    if index is None:
        return "Name the cell to replace with cell_id."
    cell = cells[index]
    if args.cell_type is not None and args.cell_type != cell.get("cell_type"):
        replacement = _new_cell(notebook, args.cell_type, args.new_source)
        if "id" in cell:
            replacement["id"] = cell["id"]
        cells[index] = cell = replacement
    cell["source"] = _like(cell.get("source"), args.new_source)
    if cell.get("cell_type") == "code":
        cell["outputs"], cell["execution_count"] = [], None
    return f"Replaced cell {cell_name(cell, index)}", args.new_source


def _like(old: Any, new: str) -> str | list[str]:
    """`new` in the form the cell held its source: Jupyter's list of lines, or one string."""
    return new.splitlines(keepends=True) if isinstance(old, list) or old is None else new


def _new_cell(notebook: dict[str, Any], cell_type: str, source: str) -> dict[str, Any]:
    """A cell as Jupyter writes one (keys in its order); with an id where the notebook's cells have
    them (nbformat 4.5 and later), and without one in an older notebook."""
    cell: dict[str, Any] = {"cell_type": cell_type}
    if cell_type == "code":
        cell["execution_count"] = None
    version = (notebook.get("nbformat", 4), notebook.get("nbformat_minor", 0))
    if version >= (4, 5) or any("id" in c for c in notebook["cells"]):
        cell["id"] = uuid.uuid4().hex[:8]
    cell["metadata"] = {}
    if cell_type == "code":
        cell["outputs"] = []
    cell["source"] = source.splitlines(keepends=True)
    return cell


def _valid(notebook: dict[str, Any]) -> bool:
    """Whether nbformat's schema accepts the notebook."""
    nbformat = _nbformat()
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError:
        return False
    return True
