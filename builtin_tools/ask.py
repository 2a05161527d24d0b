"""AskUserQuestion(questions): the model asks the user one to four multiple-choice questions and gets
the answers back. Claude Code's name and input, so prompts and agents written for it work.

The questions reach the user through the permission gate, as a question only the user can answer
(whatever the mode or the rules): the REPL shows them as a numbered list with "other", the Agent
SDK's `can_use_tool` receives them and answers with `updated_input={"questions": …, "answers":
{question: label}}`, and `piton -p`, with nobody to ask, tells the model to decide itself."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult


class Option(ToolInput):
    label: str = Field(description="The choice, in 1-5 words.")
    description: str = Field("", description="What choosing it means, or its trade-offs.")


class Question(ToolInput):
    question: str = Field(description="The whole question, ending with a question mark.")
    header: str = Field("", max_length=30, description="A very short label for it (at most 12 characters).")
    options: list[Option] = Field(
        min_length=2, max_length=4, description="2 to 4 choices; 'other' is always offered."
    )
    multiSelect: bool = Field(False, description="Whether several options may be chosen.")


class AskUserQuestionInput(ToolInput):
    questions: list[Question] = Field(min_length=1, max_length=4, description="1 to 4 questions.")
    answers: dict[str, str] | None = Field(
        None, description="Filled in by the user's interface with the answers; do not set it."
    )


class AskUserQuestion(Tool[AskUserQuestionInput]):
    name = "AskUserQuestion"
    description = (
        "Ask the user one to four multiple-choice questions while you work: to clear up an ambiguous "
        "request, to let them choose between approaches, or to learn a preference that changes what you "
        "do. Each question has 2 to 4 options (the user may always answer otherwise); set multiSelect "
        "when several may apply. Do not ask what you can find out yourself, and do not use it to ask "
        "for approval of a plan (use ExitPlanMode in plan mode)."
    )
    input_model = AskUserQuestionInput
    kind = "question"
    deferred = True  # a question now and then: loaded through ToolSearch when tool search is on

    def spec(self) -> dict[str, Any]:
        """The input the model sees: the answers are the user's to give, not a field it fills."""
        spec = super().spec()
        spec["input_schema"]["properties"].pop("answers", None)
        return spec

    def is_read_only(self, args: AskUserQuestionInput, ctx: ToolContext) -> bool:
        return True

    def is_concurrency_safe(self, args: AskUserQuestionInput, ctx: ToolContext) -> bool:
        return False  # one question at a time

    async def run(self, args: AskUserQuestionInput, ctx: ToolContext) -> ToolResult:
        if not args.answers:
            return ToolResult.error("The user gave no answers.")
        pairs = [f'"{q.question}"="{args.answers.get(q.question, "(no answer)")}"' for q in args.questions]
        # what people see under the call: each question (its short header where it has one) and
        # the answer chosen
        chosen = [
            f"{q.header or q.question} → {args.answers[q.question]}"
            for q in args.questions
            if q.question in args.answers
        ]
        return ToolResult(
            f"The user answered your questions: {', '.join(pairs)}. Go on with these answers in mind.",
            summary="; ".join(chosen) or "no answers",
        )
