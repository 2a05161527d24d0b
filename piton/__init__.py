"""Piton, a terminal coding assistant.

This package's own modules sit above the layers (`piton.core`, `piton.builtin_tools`,
`piton.skills`, `piton.cli`): `piton.runtime` is the composition root that wires tools, skills and
a provider into an agent. Importing `piton` loads nothing else.
"""

__version__ = "0.2.0"
