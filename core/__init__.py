"""Piton's core: the agent loop, the tool contract, providers, conversation state, context
management, the safety boundary and project configuration. No terminal code, and nothing from
`piton.cli`, `piton.builtin_tools` or `piton.skills`."""
