from __future__ import annotations

import pytest

from piton.core.safety.globs import glob_match


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "pkg/a.py", False),  # a star stays in one directory
        ("**/*.py", "a.py", True),  # ** may match no directory at all
        ("**/*.py", "pkg/sub/a.py", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("src/**/test_*.py", "lib/test_a.py", False),
        ("src/**", "src", True),
        ("src/**", "src/a/b.txt", True),
        ("src/**", "srcx/a", False),
        ("*.{ts,tsx}", "app.tsx", True),
        ("*.{ts,tsx}", "app.js", False),
        ("{a,b{c,d}}.txt", "bd.txt", True),
        ("?.md", "x.md", True),
        ("?.md", "xy.md", False),
        ("[!a]*.py", "b.py", True),
        ("[!a]*.py", "a.py", False),
        ("[a-c]x", "bx", True),
        (".env*", ".env.local", True),
        ("a**b", "axxb", True),  # not a path wildcard: an ordinary star
        # every alternative of a brace group is anchored at the end, not only the last one
        ("{src,lib}/*", "src/a.py", True),
        ("{src,lib}/*", "src/web/x.py", False),
        ("{src,lib}/*", "lib/web/x.py", False),
        ("{docs,*.md}", "docs/secret/key", False),
        # a `]` first in a class is one of its characters
        ("[]a].txt", "].txt", True),
        ("[]a].txt", "a.txt", True),
        ("[]a].txt", "b.txt", False),
        ("[!]a].txt", "b.txt", True),
        ("[!]a].txt", "].txt", False),
        ("[]", "[]", True),  # no closing bracket: both literal
        ("[[]x", "[x", True),
        ("a**b", "a/b", False),
        ("file (1).txt", "file (1).txt", True),  # regex metacharacters are literal
        ("a+b.txt", "aab.txt", False),
    ],
)
def test_globs_mean_what_people_expect(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected
