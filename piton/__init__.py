"""Piton, a terminal coding assistant, and the library beneath it.

This package's own modules sit above the layers (`piton.core`, `piton.builtin_tools`,
`piton.skills`, `piton.cli`): `piton.runtime` is the composition root that wires tools, skills and
a provider into an agent, and `piton.api` is the library built on it. Importing `piton` loads
nothing else: the library's names (`from piton import query, Agent, AgentOptions`) are loaded when
first asked for, so the terminal does not pay for them.
"""

TYPE_CHECKING = False  # importing `typing` would cost `piton --version` its speed

if TYPE_CHECKING:
    from piton.api import (
        Agent as Agent,
    )
    from piton.api import (
        AgentOptions as AgentOptions,
    )
    from piton.api import (
        query as query,
    )
    from piton.api import (
        tool as tool,
    )
    from piton.core.version import __version__ as __version__


def __getattr__(name: str) -> object:
    if name == "__version__":  # kept in core, which every layer may import
        from piton.core.version import __version__

        return __version__
    import importlib

    api = importlib.import_module("piton.api")
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'piton' has no attribute {name!r}")
