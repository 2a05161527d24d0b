"""Piton's version: one constant, here so that every layer may read it (`piton.__version__` is it)."""

__version__ = "0.2.0"
