"""Claude Code's hooks: commands the user sets to run at events of a session."""
