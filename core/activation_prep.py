"""The shape of what makes a loaded skill's text ready to send (the composition root supplies it:
`core` runs no skill files itself)."""

from __future__ import annotations

from typing import Protocol

from piton.core.activation import Activation
from piton.core.safety.permissions import PermissionGate
from piton.core.tools import ToolContext


class ActivationPreparer(Protocol):
    """Makes a loaded skill's text ready to send: ``!`command` `` lines run (each one checked by
    `gate` as a Bash call would be, the skill's allowed-tools granted), their output in place, and
    the files its `@path` references name inlined under the sandbox policy of `ctx`."""

    async def __call__(
        self, activation: Activation, ctx: ToolContext, gate: PermissionGate | None
    ) -> Activation: ...
