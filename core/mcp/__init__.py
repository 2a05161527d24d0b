"""MCP (Model Context Protocol) servers: their configuration, the connections to them, and their
tools as Piton tools.

`config` finds the servers the user configured (Claude Code's files and shapes, Piton's own file,
the project's `.mcp.json` and `--mcp-config`); `manager` keeps one connection per server open on a
background thread and turns each server tool into a `piton.core.tools.Tool` (`tool`). The SDK
(`mcp`) is imported only once a server is configured: it costs more than half a second.
"""
