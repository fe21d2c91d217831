"""A researcher's turn in a run: the text a question put to the agent by ``contreact
ask`` stands as in the history, and the size cap of a question (``ask`` and ``query``).

The turn follows the wording of the paper's own harness (``szeider/contreact``, ``-q``:
"RESEARCHER QUESTION: ..."), so the agent can tell it from the operator's messages and
from the cycle's opening message; the log keeps the question itself
(``RunForked.question``), the history this text, built by the fold.
"""

from __future__ import annotations

from contreact_events.catalog.query import MAX_QUESTION_CHARS

RESEARCHER_TURN = (
    "RESEARCHER QUESTION (from the researcher studying this run, not the operator): "
    "please answer it in this cycle, using your memory as you need.\n\nQuestion: {question}"
)


def researcher_turn(question: str) -> str:
    """The user turn that opens a cycle with ``question``."""
    return RESEARCHER_TURN.format(question=question)


def question_problem(question: str) -> str | None:
    """Why ``question`` cannot be asked (empty, or over ``MAX_QUESTION_CHARS``), in one
    line naming the fix; None when it can."""
    if not question.strip():
        return "the question is empty: give the question to ask in quotes"
    if len(question) > MAX_QUESTION_CHARS:
        return (
            f"the question has {len(question)} characters, over the cap of "
            f"{MAX_QUESTION_CHARS}: ask a shorter question"
        )
    return None
