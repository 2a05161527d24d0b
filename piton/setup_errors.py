"""The error a run's options raise when they cannot make a run."""

from __future__ import annotations


class SetupError(Exception):
    """Options that cannot make a run; the message is one line for people."""
