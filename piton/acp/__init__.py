"""`piton acp`: Piton as an agent of the Agent Client Protocol, for editors (Zed, JetBrains IDEs,
Neovim, Emacs) that start it as a subprocess and speak JSON-RPC over its stdin and stdout.

    server.py    the command: options, logging, the connection (the protocol's own SDK)
    agent.py     the protocol's requests: initialize, sessions (new, load, list), modes, prompt, cancel
    session.py   one editor session: a Piton session, its turn, its mode, what it told the editor
    updates.py   Piton's events and history as the protocol's session updates
    prompt.py    an editor's prompt (text, images, files, selections) as a user message
    approver.py  permission questions and AskUserQuestion as `session/request_permission`
"""
