"""How the end of a turn is told, when it is not a plain answer: tool calls that never finished
(interrupted, or failed by a crash of Piton's own), a call the output limit cut off, and answers
that stop in a way people would otherwise miss."""

from __future__ import annotations

from piton.core.conversation.events import MessageDone
from piton.core.conversation.history import interrupted_result
from piton.core.conversation.messages import FAILED_TOOL_RESULT, ToolResultBlock


def describe_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def unfinished_result(tool_use_id: str, failure: BaseException | None) -> ToolResultBlock:
    """The result of a call that never finished: interrupted (Esc, a signal), or failed (a crash)."""
    if failure is None:
        return interrupted_result(tool_use_id)
    reason = FAILED_TOOL_RESULT.format(reason=describe_error(failure))
    return ToolResultBlock(tool_use_id=tool_use_id, content=reason, is_error=True)


def cut_off(limit: int) -> str:
    return (
        f"Your reply reached the output limit ({limit:,} tokens) while you were writing this tool "
        "call, so its input was cut off and it did not run. Send less at once: split a large file "
        "into a Write of its first part and Edits that add the rest."
    )


def ending_notice(done: MessageDone, max_output: int) -> str | None:
    """One line for an answer that ended in a way people would otherwise not notice."""
    reason = done.stop_reason
    if reason == "max_tokens":
        return (
            f"the answer was cut off at the output limit ({max_output:,} tokens); ask the model to continue"
        )
    if reason == "refusal":
        return "the model declined to answer this request (stop_reason: refusal)"
    if reason not in (None, "end_turn", "stop_sequence", "tool_use"):
        return f"the answer ended early (stop_reason: {reason})"
    if not done.message.text.strip():
        return "the model gave an empty answer"
    return None
