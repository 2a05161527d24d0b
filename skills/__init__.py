"""Skill and custom-command discovery, loading and invocation."""
