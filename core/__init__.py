"""Piton's core: messages, the agent loop, providers, sessions and settings (no terminal code)."""

__version__ = "0.1.0"
