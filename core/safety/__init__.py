"""The safety boundary: sandbox policy, permission rules, shell splitting, the guard around
commands, the shell runner and the sandboxes themselves. Auditable without the rest of core."""
