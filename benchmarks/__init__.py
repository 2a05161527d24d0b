"""Benchmarks: scripts that print comparison tables against floors measured in the same run (a package
only so that type checkers see them whole)."""
