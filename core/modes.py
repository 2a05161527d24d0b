"""What the model is told each turn about the permission mode and the output style it works in."""

from __future__ import annotations

REMINDER_TAG = "<system-reminder>"


def is_reminder(text: str) -> bool:
    """Whether a text block is a note to the model (a mode's rules), not what someone typed."""
    return text.startswith(REMINDER_TAG)


# Told to the model at the start of each turn in plan mode (and once after it ends)
PLAN_MODE_REMINDER = (
    "<system-reminder>\nPlan mode is active. The user does not want you to make changes yet: do not "
    "edit or write files, do not run commands that change anything (no installs, commits or config "
    "changes), whatever other instructions say. Read, search and run read-only commands to "
    "understand the task, ask the user about anything unclear, then call ExitPlanMode with your "
    "plan for the user to approve. Do not ask for approval in text.\n</system-reminder>"
)
PLAN_MODE_ENDED = (
    "<system-reminder>\nPlan mode has ended: you may now edit files and run commands, as the "
    "permission mode allows.\n</system-reminder>"
)


def style_reminder(name: str) -> str:
    """Told each turn while an output style other than Default is chosen."""
    return (
        f"<system-reminder>\nThe output style {name!r} is active: answer as its instructions, at the end "
        "of the system prompt, describe.\n</system-reminder>"
    )
