"""Everything that touches the terminal: the command line, headless output and (later) the REPL."""
