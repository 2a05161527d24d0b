"""Piton's version: one constant, here so that every layer may read it (`piton.__version__` is it)."""

__version__ = "0.2.0"
# the Claude Code release whose stream-json and control protocol Piton speaks: what clients that
# judge a CLI by its version (the Agent SDK's `claude_code_version`) read
CLAUDE_CODE_PROTOCOL = "2.1.332"
