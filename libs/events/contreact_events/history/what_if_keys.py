"""Which settings a what-if replay may change, and why the others are refused. Pure.

A what-if re-drives ``decide`` over a run's recorded inputs (the answers of the model,
the memory service, the embedder and the operator) with the config changed. That is
honest only for a setting that ``decide``, the fold or the prompt read, and whose
change leaves the recorded inputs meaningful up to the point where it changes a
derived event or a task: from there the replay stops and says so. A setting the
workers apply (the model, its options, the embedder's check), a deadline (the clock
decides when it fires) or a text that is in every prompt (no recorded answer would
ever apply) is refused by name, with the reason.

Every setting of ``RunConfig`` is in exactly one of the two tables (a test holds it),
so a new setting must be classified here before a what-if can name it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contreact_events.config import RunConfig
from contreact_events.config.overrides import (
    Assignment,
    apply_assignments,
    changed_settings,
    tool_description_key,
)
from contreact_events.config.refusals import reason_for, refused_alike
from contreact_events.exceptions import ConfigError

OPTION = "--what-if"

ALLOWED: Mapping[str, str] = {
    "cycle_count": "decide ends the run after this many cycles",
    "max_steps_per_cycle": "decide stops a cycle's tool calls at this step",
    "final_call_at_step_cap": "decide makes one more call without tools at the step cap",
    "operator.mode": "decide answers the operator tool by policy (auto) or waits (human)",
    "operator.auto_reply": "decide's policy and timeout reply to the operator tool",
    "diversity.enabled": "decide embeds and assesses each reflection",
    "diversity.high_threshold": "decide's assessment: above it, the high advisory",
    "diversity.moderate_threshold": "decide's assessment: above it, the moderate advisory",
    "diversity.mode": "decide's paragraph repetition guard (regenerate)",
    "diversity.relaxed_threshold": "decide accepts the best attempt under it",
    "diversity.max_attempts": "decide asks for an answer again at most this often",
    "diversity.paragraph_min_length": "decide splits an answer into paragraphs of this size",
    "diversity.feedback_placement": "where decide puts the regeneration feedback",
    "limits.memory_value_chars": "the fold refuses a longer write",
    "limits.tool_argument_chars": "the fold refuses a longer tool argument",
    "limits.tool_output_chars": "the fold cuts longer tool outputs in the prompt",
    "limits.cut_arguments_in_history": "the fold cuts long tool arguments in the prompt",
}
"""The settings a what-if may change, with what reads them."""

_WHO_ANSWERS = (
    "it changes who answers or how (the model, its host or options): the recorded "
    "answers are that model's; fork the run (`contreact fork RUN --at-cycle K`) to let "
    "another one answer"
)
_EVERY_PROMPT = (
    "it is in every prompt from the first call, so no recorded answer would apply; fork "
    "the run with --set instead"
)
_CLOCK = (
    "a deadline: when it fires depends on the clock and the workers, which the log "
    "records as inputs (TaskFailed, a timeout reply), not on decide"
)
_EMBEDDER = (
    "the embedder applies it, not decide: the recorded vectors, checks and search results "
    "were made with the recorded value and cannot be re-made without the embedder"
)

REFUSED: Mapping[str, str] = {
    **refused_alike(_WHO_ANSWERS),
    "limits.llm_content_chars": (
        "the LLM worker applies it: the recorded answers are as the worker cut them"
    ),
    "system_prompt": _EVERY_PROMPT,
    "cycle_start_message": _EVERY_PROMPT,
    "tools.search_memory": _EVERY_PROMPT + " (it changes the tools offered)",
    "tools.added": _EVERY_PROMPT + " (the tools offered and their words)",
    "tools.self_report": _EVERY_PROMPT + " (the tools' parameters)",
    "deadlines": _CLOCK,
    "operator.timeout_s": _CLOCK,
    "tools.search_k": _EMBEDDER,
    "diversity.embedding_model": _EMBEDDER,
    "diversity.paragraph_threshold": _EMBEDDER,
    "diversity.natural_repetition_patterns": _EMBEDDER,
    "diversity.corpus_scope": _EMBEDDER + " (against the other corpus)",
    "history": (
        "a compaction's summary is a model's answer, recorded as it was made; a window "
        "would change every later prompt, so no recorded answer would apply: fork the "
        "run with --set instead"
    ),
    "budget": (
        "a budget ends a run where its recorded spend reaches it: read the spend in "
        "`contreact show RUN`, or fork the run with --set budget.cost=N"
    ),
    "prices": "the LLM worker prices each call: the recorded costs are as it priced them",
    "cognition": (
        "the operator exchanges' analyses, the memory policy's stores and the memory "
        "block's retrievals are recorded as the services made them (a model's answers "
        "and the embedder's rankings cannot be re-made); fork the run with --set instead"
    ),
}
"""Settings (or whole sections) a what-if refuses, with why."""


def refusal(key: str) -> str | None:
    """Why ``key`` (a dotted setting path) may not be changed; None if it may."""
    if key in ALLOWED:
        return None
    if tool_description_key(key):
        return REFUSED["tools.added"]
    return reason_for(key, REFUSED) or "decide does not read it"


def what_if_config(
    config: RunConfig, assignments: Iterable[Assignment]
) -> tuple[RunConfig, dict[str, tuple[Any, Any]]]:
    """``config`` with the assignments applied and validated, and the settings that
    changed (``(recorded, what-if)`` by dotted path). ConfigError, one line, names
    every refused key with its reason (a whole section is judged by its leaves)."""
    assignments = tuple(assignments)
    check_keys(assignments)
    changed_config = apply_assignments(config, assignments, source=OPTION)
    changes = changed_settings(config, changed_config)
    refused = {key: reason for key in changes if (reason := refusal(key)) is not None}
    if refused:
        raise ConfigError(_refused_line(refused))
    return changed_config, changes


def check_keys(assignments: Iterable[Assignment]) -> None:
    """ConfigError naming every refused key, by its name alone (no config needed, so
    a command can refuse before it reads a run); a whole section is judged later, by
    the settings it changes."""
    refused = {
        a.key: reason
        for a in assignments
        if not _is_section(a.key) and (reason := refusal(a.key)) is not None
    }
    if refused:
        raise ConfigError(_refused_line(refused))


def _is_section(key: str) -> bool:
    return any(path.startswith(f"{key}.") for path in (*ALLOWED, *REFUSED))


def _refused_line(refused: Mapping[str, str]) -> str:
    named = "; ".join(f"{key} is refused: {reason}" for key, reason in refused.items())
    return f"{OPTION}: {named} (`contreact replay --help` lists what a what-if may change)"


__all__ = ["ALLOWED", "OPTION", "REFUSED", "check_keys", "refusal", "what_if_config"]
