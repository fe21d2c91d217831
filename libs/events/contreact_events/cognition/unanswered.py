"""An operator exchange nobody answered in time (``operator.timeout_s`` ran out): the run
went on with the automatic reply (``operator.auto_reply``, ``OperatorReplied.by ==
"timeout"``), which is the run's configuration speaking, not the operator. Its analysis
says so and reads nothing into those words: no intent or context of the operator's to
classify (confidence 0), nothing of theirs to keep (persistence 0, so the memory policy
keeps nothing), no memory relevant to them. Neither the heuristic nor a model is asked
to read the automatic reply as the operator's. Pure."""

from __future__ import annotations

from contreact_events.catalog.exchange import MAX_SUMMARY_CHARS, Analysis

QUOTED_CHARS = 120
"""How much of the automatic reply the summary quotes."""


def analyse_unanswered(timeout_s: float | None, auto_reply: str) -> Analysis:
    """The analysis of an exchange whose reply timed out after ``timeout_s``."""
    text = " ".join(auto_reply.split())
    if len(text) > QUOTED_CHARS:
        text = text[: QUOTED_CHARS - 3] + "..."
    waited = f"within {timeout_s:g} s" if timeout_s is not None else "in time"
    summary = (
        f"No reply from the operator {waited}: the automatic reply stood in "
        f'("{text}"); it is not the operator\'s words.'
    )
    return Analysis(
        intent="conversation",
        context_type="continuation",
        confidence=0.0,
        persistence_score=0.0,
        summary=summary[:MAX_SUMMARY_CHARS],
        relevant_memories=(),
        reasoning=(
            "the reply timed out: its text is operator.auto_reply, given by the run's "
            "policy when nobody answers, so there is no intent or context of the "
            "operator's to classify and nothing of theirs to keep"
        ),
        analyser="heuristic",
    )
