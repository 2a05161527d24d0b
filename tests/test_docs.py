"""The README is a front door into the manual in docs/: short, and every link in it leads somewhere.
(The manual's own links are checked by `mkdocs build --strict`, which .ci/run runs.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def test_the_readme_is_short_and_its_links_lead_to_files_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    targets = [m.group(1) for m in _LINK.finditer(readme) if "://" not in m.group(1)]
    assert "docs/install.md" in targets
    assert [t for t in targets if not (ROOT / t).is_file()] == []


def test_every_page_of_the_manual_is_in_its_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert [p for p in pages if f" {p}" not in nav] == []
