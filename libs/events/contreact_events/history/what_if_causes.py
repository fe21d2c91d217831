"""Why a what-if run parts from the recorded one, in words. Pure.

``explain`` is given the what-if state just before the first differing event (its
config is the what-if config), the event the what-if run derives there (None: it
waits for an input), the one the recorded run derived (None: it waited) and what the
log holds at that place. Each known cause has its sentence; any other difference is
named by its event and fields. Agent text is quoted shortened; callers escape it
for where they show it.
"""

from __future__ import annotations

from typing import Any

from contreact_events.catalog import Event
from contreact_events.catalog.cycle import StepLimitReached
from contreact_events.catalog.diversity import RegenerationRequested, SimilarityAssessed
from contreact_events.catalog.tool import OperatorReplied, ToolCallCompleted
from contreact_events.config import DiversityConfig, RunConfig
from contreact_events.core.state import AgentState
from contreact_events.wire.tasks import EmbedTask, LLMTask, MemoryTask

NO_LONGER_APPLY = "the recorded answers do not apply from here"
OPERATOR_NOT_REUSED = "recorded operator replies are not reused past here"


def explain(
    state: AgentState, mine: Event | None, theirs: Event | None, logged: Event | None
) -> str:
    """One sentence (or two) on why ``mine`` replaces ``theirs``."""
    config = state.config
    assert config is not None  # a run past its request has a config
    specific = _specific(state, config, mine, theirs, logged)
    if specific is not None:
        return specific
    if mine is None:
        waits = f"the what-if run waits here (phase {state.phase})"
        return f"{waits} where the recorded run went on with {_name(theirs)}; {NO_LONGER_APPLY}"
    if theirs is None:
        nxt = f"the log's next event is {logged.type}" if logged else "the log ends"
        return (
            f"the what-if run goes on with {mine.type} where the recorded run waited for "
            f"an input ({nxt}); {NO_LONGER_APPLY}"
        )
    if type(mine) is not type(theirs):
        return f"decide yields {mine.type} where the recorded run had {theirs.type}; " + (
            NO_LONGER_APPLY
        )
    return f"{mine.type} differs from the recorded one; {NO_LONGER_APPLY}"


def _specific(
    state: AgentState,
    config: RunConfig,
    mine: Event | None,
    theirs: Event | None,
    logged: Event | None,
) -> str | None:
    kinds = (_name(mine), _name(theirs))
    if isinstance(mine, SimilarityAssessed) and isinstance(theirs, SimilarityAssessed):
        return _assessment(config, mine, theirs)
    if kinds == ("EmbeddingRequested", "CycleEnded"):
        return (
            f"diversity.enabled: the reflection of cycle {state.cycle_number} would be "
            f"embedded and assessed; the recorded run has no vector for it, so "
            f"{NO_LONGER_APPLY}"
        )
    if kinds in (("CycleEnded", "EmbeddingRequested"), ("CycleEnded", "SimilarityAssessed")):
        return (
            f"diversity.enabled false: cycle {state.cycle_number} ends without an assessment, "
            "so later prompts lose the advisories the recorded run gave; " + NO_LONGER_APPLY
        )
    if kinds == ("ParagraphCheckRequested", "ReflectionRecorded"):
        return (
            "diversity.mode regenerate: the answer would first be checked for repeated "
            f"paragraphs, a check the recorded run never asked for; {NO_LONGER_APPLY}"
        )
    if kinds == ("ReflectionRecorded", "ParagraphCheckRequested"):
        return (
            "the answer would be recorded as the reflection without the paragraph check "
            f"the recorded run made (diversity.mode {config.diversity.mode}, "
            f"paragraph_min_length {config.diversity.paragraph_min_length}); {NO_LONGER_APPLY}"
        )
    if isinstance(mine, StepLimitReached) or isinstance(theirs, StepLimitReached):
        return _step_cap(state, config, mine, theirs)
    if kinds in (("RunCompleted", "CycleStarted"), ("CycleStarted", "RunCompleted")):
        if kinds[0] == "RunCompleted":
            return (
                f"cycle_count {config.cycle_count}: the run ends after cycle "
                f"{state.cycle_number}, where the recorded run went on"
            )
        return (
            f"cycle_count {config.cycle_count}: the run would go on to cycle "
            f"{state.cycle_number + 1}, which the recorded run never had; nothing is "
            "recorded for it"
        )
    if isinstance(mine, OperatorReplied) or isinstance(theirs, OperatorReplied):
        return _operator(config, mine, theirs, logged)
    if kinds == ("LLMRequested", "LLMRequested"):
        assert mine is not None and theirs is not None
        return (
            f"the prompt of call {getattr(mine, 'step', '?')} differs (prompt_sha256 "
            f"{_short_hash(mine)} where the recorded call had {_short_hash(theirs)}): "
            f"the model would be asked something else, so {NO_LONGER_APPLY}"
        )
    if isinstance(mine, ToolCallCompleted) and theirs is None:
        return (
            f"{mine.tool_name} is refused by the limits now ({_quote(mine.output)}); the "
            f"recorded call went to the worker, so {NO_LONGER_APPLY}"
        )
    if mine is None and isinstance(theirs, ToolCallCompleted) and not theirs.ok:
        return (
            f"{theirs.tool_name} passes the checks now and would go to the worker, whose "
            f"answer was never recorded (the recorded run refused it: "
            f"{_quote(theirs.output)}); {NO_LONGER_APPLY}"
        )
    if (
        isinstance(mine, RegenerationRequested)
        and isinstance(theirs, RegenerationRequested)
        and mine.pinned != theirs.pinned
    ):
        where = "where the rejected answer was" if mine.pinned else "after the newest message"
        return (
            f"diversity.feedback_placement {config.diversity.feedback_placement}: the "
            f"regeneration feedback would stand {where}; the next prompt changes, so "
            f"{NO_LONGER_APPLY}"
        )
    if kinds[0] in ("RegenerationRequested", "TopicExhausted", "ReflectionRecorded") and kinds[
        1
    ] in ("RegenerationRequested", "TopicExhausted", "ReflectionRecorded", "ParagraphsAccepted"):
        div = config.diversity
        return (
            f"the paragraph guard decides otherwise (max_attempts {div.max_attempts}, "
            f"relaxed_threshold {div.relaxed_threshold}): {_name(mine)} where the recorded "
            f"run had {_name(theirs)}; {NO_LONGER_APPLY}"
        )
    return None


def _assessment(config: RunConfig, mine: SimilarityAssessed, theirs: SimilarityAssessed) -> str:
    div = config.diversity
    similarity = mine.max_similarity
    if similarity is None or mine.level == theirs.level:
        return f"the assessment of cycle {mine.cycle} differs; {NO_LONGER_APPLY}"
    text = (
        f"similarity {similarity:.2f} {_against(similarity, mine.level, div)} gives "
        f"{_advisory(mine.level)} where the recorded run had {_advisory(theirs.level)}"
    )
    if mine.cycle >= config.cycle_count:
        return f"{text}; this is the last cycle, so no prompt sees it"
    return f"{text}; cycle {mine.cycle + 1}'s prompt changes, so {NO_LONGER_APPLY}"


def _against(similarity: float, level: str, div: DiversityConfig) -> str:
    if level == "high":
        return f"> {div.high_threshold:g} (diversity.high_threshold)"
    if level == "moderate":
        return (
            f"> {div.moderate_threshold:g} (diversity.moderate_threshold) and "
            f"<= {div.high_threshold:g} (high)"
        )
    return f"<= {div.moderate_threshold:g} (diversity.moderate_threshold)"


def _advisory(level: str) -> str:
    return "no advisory" if level == "none" else f"the {level} advisory"


def _step_cap(
    state: AgentState, config: RunConfig, mine: Event | None, theirs: Event | None
) -> str:
    cap = config.max_steps_per_cycle
    if isinstance(mine, StepLimitReached):
        then = (
            "the model gets one more call, without tools (final_call_at_step_cap)"
            if mine.final_call
            else "the cycle ends on the cut answer (final_call_at_step_cap false)"
        )
        if isinstance(theirs, StepLimitReached):
            return f"at the step cap {then}, unlike the recorded run; {NO_LONGER_APPLY}"
        return (
            f"the model still calls tools at step {mine.steps}, which reaches "
            f"max_steps_per_cycle {cap}: {then}; {NO_LONGER_APPLY}"
        )
    assert isinstance(theirs, StepLimitReached)
    return (
        f"step {theirs.steps} is under max_steps_per_cycle {cap}: the model's tool calls "
        f"would run where the recorded run stopped at its cap; {NO_LONGER_APPLY}"
    )


def _operator(
    config: RunConfig, mine: Event | None, theirs: Event | None, logged: Event | None
) -> str:
    operator = config.operator
    if isinstance(mine, OperatorReplied) and isinstance(theirs, OperatorReplied):
        return (
            f"the {mine.by} reply would be {_quote(mine.text)} (operator.auto_reply) where "
            f"the recorded one was {_quote(theirs.text)}; the next prompt changes, so "
            f"{NO_LONGER_APPLY}"
        )
    if isinstance(mine, OperatorReplied):
        person = (
            f" (who replied {_quote(logged.text)})" if isinstance(logged, OperatorReplied) else ""
        )
        return (
            f"operator.mode {operator.mode} answers by policy with {_quote(mine.text)} where "
            f"the recorded run waited for a person{person}; {OPERATOR_NOT_REUSED}"
        )
    if mine is None and isinstance(theirs, OperatorReplied):
        return (
            f"operator.mode {operator.mode}: the run waits for a person where the recorded "
            f"run answered by {theirs.by}; {OPERATOR_NOT_REUSED}"
        )
    return f"the operator tool is answered otherwise; {OPERATOR_NOT_REUSED}"


def explain_task(
    task_id: str,
    mine: LLMTask | MemoryTask | EmbedTask | None,
    theirs: LLMTask | MemoryTask | EmbedTask | None,
    fields: tuple[str, ...],
) -> str:
    """A task that the what-if run would send with another payload."""
    if mine is None or theirs is None:
        sent = "would be sent" if mine is not None else "would not be sent"
        return f"task {task_id} {sent}, unlike in the recorded run; {NO_LONGER_APPLY}"
    changed = ", ".join(
        f"{name} {_value(getattr(mine, name))} (recorded {_value(getattr(theirs, name))})"
        for name in fields
    )
    return (
        f"task {task_id} would be sent with {changed}: its recorded answer does not apply, "
        f"nor do those after it"
    )


def _name(event: Event | None) -> str:
    return event.type if event is not None else "nothing"


def _short_hash(event: Event) -> str:
    value = getattr(event, "prompt_sha256", None)
    return value[:12] if isinstance(value, str) else "not recorded"


def _quote(text: str, limit: int = 60) -> str:
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(shown)


def _value(value: Any) -> str:
    return _quote(value) if isinstance(value, str) else repr(value)[:60]


__all__ = ["NO_LONGER_APPLY", "OPERATOR_NOT_REUSED", "explain", "explain_task"]
