"""The paper's assessment protocol, pure: what an evaluator model is sent.

The paper swaps the model after the last cycle: the evaluator receives the history as
the agent last saw it, then the instrument's prompt as the next user turn, with no
tools. Here that history is rebuilt from the run's log by the fold, as every prompt of
the run was: the system message of the agent's last call (the system prompt with the
advisory in force in the last cycle, if any), then every message of the history once,
in order, the last cycle's answer included. (The final state's own prompt,
``prompt_messages(final_state)``, would drop the advisory: the fold clears it when the
cycle ends. The agent's last prompt carried it, so the evaluator's does.) For a
completed run, the rated prefix is the whole log; for a failed or cancelled one, the
log up to its last completed cycle (a cycle cut short is not rated).

How this relates to what the agent saw, and how the test checks it: the run log
records, in each ``LLMRequested``, the hash of the exact messages and tools that call
sent (``prompt.prompt_sha256``). The evaluator input without the instrument turn is
that last call's messages followed by what the history gained after it (the agent's
answer, the notes of tool calls a step cap dropped): its first ``k`` messages, hashed
with the tools that call offered, give the recorded ``prompt_sha256`` of the last call.
(Not when the last cycle's answer was asked for again by the repetition guard: the
guard's feedback stood in that call's prompt but is no part of the history, which is
what the agent carries on with.) The recorded input hash, ``input_sha256``, uses the
same function (``prompt.sha256_of_prompt``) with no tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contreact_events.catalog import AssessmentBase, AssessmentFailed, Event
from contreact_events.catalog.chat import ChatMessage
from contreact_events.catalog.cycle import CycleEnded, CycleStarted
from contreact_events.core.compaction import window_described
from contreact_events.core.fold import fold_all
from contreact_events.core.folding import evolve
from contreact_events.core.prompt import system_message
from contreact_events.core.state import AgentState
from contreact_events.exceptions import NotAssessable, UnknownInstrument
from contreact_events.history.pinned import PinnedInput
from contreact_events.instruments import Instrument, load_instrument


@dataclass(frozen=True)
class EvaluatorInput(PinnedInput):
    """What the evaluator is sent (the user turn: the instrument's prompt), and what pins
    it to the run (``run_events``: the events rated)."""

    history_seen: str = "whole"
    """Which history the evaluator saw: ``whole``, or (``history: truncate | compact``)
    the part the agent's own prompts carried (``core.compaction.window_described``)."""


def rated_prefix(events: Sequence[Event]) -> int:
    """How many events of the log an assessment rates; refuses a run that has not
    ended or has no completed cycle, in one line naming why."""
    return _rated(events)[0]


def _rated(events: Sequence[Event]) -> tuple[int, AgentState]:
    """The rated prefix's length and the state it folds to."""
    if not events:
        raise NotAssessable("the run's log is empty: nothing to assess")
    final = fold_all(events)
    if not final.terminal:
        raise NotAssessable(
            f"run {final.run_id} has not ended (status {final.status}): assess it once it "
            "has completed"
        )
    if final.status == "completed":
        return len(events), final
    ends = [i for i, event in enumerate(events) if isinstance(event, CycleEnded)]
    if not ends:
        raise NotAssessable(
            f"run {final.run_id} {final.status} before completing a cycle: no history to assess"
        )
    return ends[-1] + 1, fold_all(events[: ends[-1] + 1])


def evaluator_input(events: Sequence[Event], instrument: Instrument) -> EvaluatorInput:
    """The evaluator's messages for rating the run of ``events`` with ``instrument``."""
    count, state = _rated(events)
    rated = events[:count]
    advisory = next((e.advisory for e in reversed(rated) if isinstance(e, CycleStarted)), None)
    return EvaluatorInput.asking(
        state,
        _last_system_message(state, advisory),
        instrument.prompt,
        count,
        history_seen=window_described(state),
    )


def _last_system_message(state: AgentState, advisory: str | None) -> ChatMessage:
    """The system message of the last cycle's calls (the fold clears the advisory when
    the cycle ends)."""
    return system_message(evolve(state, {"advisory": advisory}))


def verify_assessment(events: Sequence[Event], record: AssessmentBase) -> str | None:
    """Rebuild the evaluator input of ``record`` from the run's log and compare: None
    when it matches, else one line saying what differs. A failed record that pinned no
    input (its input could not be built) makes no claim to check: None."""
    if isinstance(record, AssessmentFailed) and not record.input_sha256:
        return None
    try:
        instrument = load_instrument(record.instrument)
    except UnknownInstrument as exc:
        return str(exc)
    if instrument.text_sha256 != record.instrument_sha256:
        return (
            f"instrument {record.instrument} text changed since the rating: version "
            f"{record.instrument_version} (sha256 {record.instrument_sha256[:12]}) was asked, "
            f"this code ships version {instrument.version} (sha256 {instrument.text_sha256[:12]})"
        )
    try:
        built = evaluator_input(events, instrument)
    except NotAssessable as exc:
        return str(exc)
    return built.difference(record, reader="the rating", name="evaluator input")
