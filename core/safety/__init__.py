"""The safety boundary: sandbox policy, permission rules and the gate, shell splitting, the guard
around commands, the command orchestrator that runs every command once it is allowed, the shell
runner and the sandboxes themselves. Auditable without the rest of core."""
