"""What the project and the user configure: settings files, instruction files, the system prompt,
and where a project begins."""
