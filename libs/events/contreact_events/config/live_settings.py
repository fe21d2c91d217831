"""Which settings ``contreact set`` may change while a run runs, and why the others are
refused by name. Pure.

A change is honest mid-run when it changes only what the run does from then on, and
the run's earlier cycles stay what they were under the old value: the cycle count
(read at each cycle's end), the step cap and the final call (read at each step), the
operator's mode and reply (read at the next call of the operator tool), the deadlines
(read whenever a wait is checked), the size caps (read as each call, tool result or
answer comes) and the budget (read before each model call). A setting that changes
who answers, a text in every prompt, or what the diversity check and cognition built
from the earlier cycles would make one run two experiments: it is refused with the
reason, as a what-if refuses (``history.what_if_keys``), and the fix is a fork with
``--set``.

Every setting of ``RunConfig`` is in exactly one of the two tables (a test holds it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contreact_events.config import RunConfig
from contreact_events.config.overrides import (
    Assignment,
    apply_assignments,
    changed_settings,
    setting_paths,
)
from contreact_events.config.refusals import reason_for, refused_alike
from contreact_events.exceptions import ConfigError

OPTION = "set"

_BUDGET = "read before each model call: the run stops once its spend reaches it"

LIVE: Mapping[str, str] = {
    "cycle_count": "read at each cycle's end: the run ends after this many cycles",
    "max_steps_per_cycle": "read at each step: a cycle's tool calls stop at this step",
    "final_call_at_step_cap": "read at the step cap: one more call without tools",
    "operator.mode": "read at the next call of the operator tool",
    "operator.auto_reply": "read at the next policy or timeout reply",
    "operator.timeout_s": "read while a human reply is awaited",
    "deadlines.check_s": "read whenever a wait is checked",
    "deadlines.llm_s": "read whenever a wait is checked",
    "deadlines.memory_s": "read whenever a wait is checked",
    "deadlines.embed_s": "read whenever a wait is checked",
    "deadlines.retries": "read when a task fails",
    "limits.memory_value_chars": "read at the next write",
    "limits.tool_argument_chars": "read at the next tool call",
    "limits.tool_output_chars": "read as each tool result reaches the prompt",
    "limits.llm_content_chars": "read by the LLM worker for the next call sent",
    "limits.cut_arguments_in_history": "read as each tool call reaches the prompt",
    "budget.tokens": _BUDGET,
    "budget.cost": _BUDGET,
    "budget.wall_s": _BUDGET,
}
"""The settings a live run may change, with when the run reads them."""

_FORK = "fork the run with --set instead (`contreact fork RUN --at-cycle K --set ...`)"
_WHO_ANSWERS = (
    "it changes who answers or how (the model, its host or options): the run's answers "
    f"so far are that model's; {_FORK}"
)
_EVERY_PROMPT = f"it is in every prompt from the first call: {_FORK}"
_BUILT = (
    "what the run built from its earlier cycles (embeddings, corpus, analyses, "
    f"retrievals) was made under the old value: {_FORK}"
)

REFUSED: Mapping[str, str] = {
    **refused_alike(_WHO_ANSWERS),
    "system_prompt": _EVERY_PROMPT,
    "cycle_start_message": _EVERY_PROMPT,
    "tools": _EVERY_PROMPT + " (it changes the tools offered)",
    "diversity": _BUILT,
    "cognition": _BUILT,
    "history": f"it decides what every later prompt carries of the earlier ones: {_FORK}",
    "prices": (
        "the LLM worker prices each call with the run's table: the run's spend would "
        f"add two tables' prices; {_FORK}"
    ),
}
"""Settings (or whole sections) a live run may not change, with why."""


def _live_sections() -> frozenset[str]:
    """The sections every setting of which is live (``budget``: set on a run without
    one, the change is the whole section)."""
    paths = setting_paths(RunConfig)
    leaves = {p for p in paths if not any(q.startswith(f"{p}.") for q in paths)}
    sections = {p for p in paths if p not in leaves}
    return frozenset(
        section
        for section in sections
        if all(leaf in LIVE for leaf in leaves if leaf.startswith(f"{section}."))
    )


LIVE_SECTIONS = _live_sections()


def refusal(key: str) -> str | None:
    """Why ``key`` (a dotted setting path) may not change mid-run; None if it may."""
    if key in LIVE or key in LIVE_SECTIONS:
        return None
    return reason_for(key, REFUSED) or "not a setting a live run reads"


def live_config(
    config: RunConfig,
    assignments: Iterable[Assignment],
    *,
    cycle: int = 0,
    require_change: bool = True,
) -> tuple[RunConfig, dict[str, tuple[Any, Any]]]:
    """``config`` with the assignments applied and validated as a whole, and the
    settings that changed (``(old, new)`` by dotted path), for a run in cycle
    ``cycle``. ConfigError, one line: a refused key with its reason, a value the
    config's own validation refuses, a cycle count below the current cycle, or (with
    ``require_change``: the CLI's check; the orchestrator's accepts it) no change."""
    assignments = tuple(assignments)
    if not assignments:
        raise ConfigError(f"{OPTION}: give at least one KEY=VALUE")
    refused = {a.key: reason for a in assignments if (reason := refusal(a.key)) is not None}
    if refused:
        raise ConfigError(_refused_line(refused))
    changed = apply_assignments(config, assignments, source=OPTION)
    changes = changed_settings(config, changed)
    refused = {key: reason for key in changes if (reason := refusal(key)) is not None}
    if refused:
        raise ConfigError(_refused_line(refused))
    if changed.cycle_count < cycle:
        raise ConfigError(
            f"{OPTION}: cycle_count={changed.cycle_count} is below the run's current cycle "
            f"{cycle}: give {cycle} or more (or cancel the run)"
        )
    if require_change and not changes:
        raise ConfigError(f"{OPTION}: every value given is the run's already: nothing to change")
    return changed, changes


def applied(config: RunConfig, changes: Mapping[str, tuple[Any, Any]]) -> RunConfig:
    """``config`` with the new values of a logged change (``SettingsChanged.changes``)."""
    return apply_assignments(
        config, (Assignment(key, new) for key, (_old, new) in changes.items()), source=OPTION
    )


def _refused_line(refused: Mapping[str, str]) -> str:
    named = "; ".join(f"{key} cannot change mid-run: {reason}" for key, reason in refused.items())
    return f"{OPTION}: {named} (`contreact set --help` lists what can)"
