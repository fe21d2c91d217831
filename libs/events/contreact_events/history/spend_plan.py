"""``contreact experiment plan``: the runs, the calls, the tokens and the cost an
experiment file calls for, before anything runs. Pure.

Each run is walked cycle by cycle as the core would drive it, its history growing as a
model's does: every call's prompt is the system prompt (with the tools paragraph), the
tool definitions and the whole history so far, counted at about four characters a
token (``config.spend.prompt_tokens``, the count the scripted backend reports). What a
model would answer cannot be known, so:

* a scripted run's answers are its script's (the calls per cycle, their text and tool
  calls follow from it exactly, the step cap and the final call included);
* any other run makes ``calls_per_cycle`` calls a cycle, each answering
  ``answer_tokens`` tokens, every call but the last with one tool call of
  ``tool_call_chars`` characters of arguments;
* every tool result is ``tool_result_chars`` characters (a memory write's answer is
  about 30), an operator message's the configured automatic reply;
* no advisory, regeneration, memory block or exchange analysis is counted (they add a
  few hundred characters where they happen).

A fork of the file's ``fork`` section is walked as its parent up to the fork's cycle,
then as itself; only its own calls count. A run's cost is its tokens at its price-table
price (``unknown`` without one: a provider's own figure is known only once the call is
made). A run with a ``budget`` that the walk reaches is cut there, as the run would be.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contreact_events.config import RunConfig
from contreact_events.config.experiment import ExperimentConfig, PlannedRun
from contreact_events.config.spend import (
    CHARS_PER_TOKEN,
    COST_UNIT,
    budget_reached,
    message_text,
    missing_price,
    prompt_tokens,
)
from contreact_events.core.tools import (
    OPERATOR_TOOL,
    offered_tools,
    system_prompt_with_tools,
    tool_schemas,
)
from contreact_events.history.experiment_forks import PlannedFork
from contreact_events.protocol import paper_system_prompt


@dataclass(frozen=True)
class Assumptions:
    """What the plan assumes where the file does not say (``--calls-per-cycle`` ...)."""

    calls_per_cycle: int = 4
    answer_tokens: int = 300
    tool_call_chars: int = 120
    tool_result_chars: int = 40

    def lines(self) -> list[str]:
        return [
            f"a model that is not scripted makes {self.calls_per_cycle} LLM call(s) a cycle "
            f"(--calls-per-cycle), each answering {self.answer_tokens} tokens "
            f"(--answer-tokens), all but the last with one tool call of "
            f"{self.tool_call_chars} characters (--tool-call-chars)",
            "a scripted run answers as its script says (calls per cycle, text, tool calls)",
            f"every tool result is {self.tool_result_chars} characters "
            "(--tool-result-chars); an operator message gets the automatic reply",
            f"a prompt is the system prompt, the tool definitions and the whole history so "
            f"far, at {CHARS_PER_TOKEN} characters a token; advisories, regenerations, "
            "memory blocks and exchange analyses are not counted",
            "cost: tokens times the price table's price per million tokens; unknown without "
            "one (a provider's own figure is known only once a call is made)",
        ]


@dataclass
class RunEstimate:
    """One run (or fork) as the plan foresees it."""

    run_id: str
    label: str
    model: str
    cycles: int
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    """In ``COST_UNIT``; None: no price for its model."""
    stopped_by: str | None = None
    """The budget limit the walk reached (the run would stop there), if any."""
    note: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "label": self.label,
            "model": self.model,
            "cycles": self.cycles,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens": self.tokens,
            "cost": self.cost,
            "stopped_by": self.stopped_by,
            "note": self.note,
        }


@dataclass
class ExperimentPlan:
    experiment: str
    runs: list[RunEstimate]
    assumptions: Assumptions
    warnings: list[str] = field(default_factory=list)
    budget_note: str | None = None

    @property
    def calls(self) -> int:
        return sum(run.calls for run in self.runs)

    @property
    def tokens(self) -> int:
        return sum(run.tokens for run in self.runs)

    @property
    def cost(self) -> float | None:
        """The sum over runs of known cost; None when no run has a price."""
        known = [run.cost for run in self.runs if run.cost is not None]
        return sum(known) if known else None

    @property
    def unpriced(self) -> int:
        return sum(run.cost is None for run in self.runs)

    def as_json(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "runs": [run.as_json() for run in self.runs],
            "calls": self.calls,
            "tokens": self.tokens,
            "cost": self.cost,
            "cost_unit": COST_UNIT,
            "unpriced_runs": self.unpriced,
            "budget": self.budget_note,
            "assumptions": self.assumptions.lines(),
            "warnings": self.warnings,
        }


class _Walk:
    """One run's conversation as the plan grows it."""

    def __init__(self, config: RunConfig) -> None:
        self.texts: list[str] = []
        self.calls = 0
        self.use(config)

    def use(self, config: RunConfig) -> None:
        """Go on under ``config`` (a fork: the target's settings from here)."""
        self.config = config
        offered = offered_tools(config.tools.search_memory)
        prompt = config.system_prompt or paper_system_prompt()
        self.system = system_prompt_with_tools(prompt, offered)
        self.tools = tool_schemas(offered)


def plan_experiment(
    experiment: ExperimentConfig,
    planned: Sequence[PlannedRun],
    forks: Sequence[PlannedFork],
    assumptions: Assumptions = Assumptions(),
) -> ExperimentPlan:
    """Every run and fork of the file, estimated (see the module's docstring)."""
    runs = [estimate_run(run.config, run.label, assumptions) for run in planned]
    for fork in forks:
        runs.append(estimate_fork(fork, assumptions))
    warnings = list(
        dict.fromkeys(
            line
            for run in planned
            if (line := missing_price(run.config.prices, run.config.model_name)) is not None
        )
    )
    plan = ExperimentPlan(experiment.experiment, runs, assumptions, warnings)
    budget = experiment.experiment_budget
    if budget is not None:
        spent_tokens, spent_cost = 0, 0.0
        for number, run in enumerate(runs, start=1):
            spent_tokens += run.tokens
            spent_cost += run.cost or 0.0
            reached = budget_reached(budget, tokens=spent_tokens, cost=spent_cost, elapsed_s=None)
            if reached is not None:
                plan.budget_note = (
                    f"the experiment's budget would stop it after {number} of {len(runs)} "
                    f"run(s): {reached}"
                )
                break
    return plan


def estimate_run(config: RunConfig, label: str, assumptions: Assumptions) -> RunEstimate:
    estimate = RunEstimate(config.run_id, label, config.model_name, config.cycle_count)
    walk = _Walk(config)
    for cycle in range(1, config.cycle_count + 1):
        if not _cycle(walk, cycle, estimate, assumptions):
            break
    _price(estimate, config)
    return estimate


def estimate_fork(fork: PlannedFork, assumptions: Assumptions) -> RunEstimate:
    """The parent walked to the fork's cycle (not counted), then the fork's own cycles."""
    parent = fork.parent.config
    prefix = RunEstimate(parent.run_id, fork.parent.label, parent.model_name, fork.at_cycle)
    walk = _Walk(parent)
    for cycle in range(1, fork.at_cycle + 1):
        _cycle(walk, cycle, prefix, assumptions, budget=False)
    config = fork.config
    run_id = fork.run_id(parent.run_id)
    estimate = RunEstimate(
        run_id, f"{fork.parent.label} -> {fork.label}", config.model_name, config.cycle_count
    )
    estimate.note = f"fork of {parent.run_id} at cycle {fork.at_cycle}: its own cycles only"
    walk.use(config)
    for cycle in range(fork.at_cycle + 1, config.cycle_count + 1):
        if not _cycle(walk, cycle, estimate, assumptions):
            break
    estimate.cycles = config.cycle_count - fork.at_cycle
    _price(estimate, config)
    return estimate


def _price(estimate: RunEstimate, config: RunConfig) -> None:
    price = config.price
    if price is not None:
        estimate.cost = price.cost(estimate.prompt_tokens, estimate.completion_tokens)


def _cycle(
    walk: _Walk,
    cycle: int,
    estimate: RunEstimate,
    assumptions: Assumptions,
    *,
    budget: bool = True,
) -> bool:
    """Walk one cycle; False when the run's budget stops it (before a call)."""
    config = walk.config
    walk.texts.append(config.cycle_start_message.replace("{cycle}", str(cycle)))
    step = 0
    final = False
    while True:
        if budget and config.budget is not None:
            cost = (
                config.price.cost(estimate.prompt_tokens, estimate.completion_tokens)
                if (config.price)
                else 0.0
            )
            reached = budget_reached(
                config.budget, tokens=estimate.tokens, cost=cost, elapsed_s=None
            )
            if reached is not None:
                estimate.stopped_by = f"cycle {cycle}: {reached}"
                return False
        step += 1
        tools = () if final else walk.tools
        estimate.prompt_tokens += prompt_tokens([walk.system, *walk.texts], tools)
        estimate.calls += 1
        content, calls = _answer(walk, step, cycle, assumptions)
        walk.calls += 1
        estimate.completion_tokens += _completion_tokens(config, content, assumptions)
        walk.texts.append(message_text(content, calls))
        if not calls or final:
            return True
        if step >= config.max_steps_per_cycle:
            if not config.final_call_at_step_cap:
                return True
            final = True
            walk.texts.extend("not executed: tools are off" for _ in calls)
            continue
        for name, _arguments in calls:
            if name == OPERATOR_TOOL:
                walk.texts.append(config.operator.auto_reply)
            else:
                walk.texts.append("x" * assumptions.tool_result_chars)


def _answer(
    walk: _Walk, step: int, cycle: int, assumptions: Assumptions
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """The answer of the walk's next call: the script's, or the assumed one."""
    script = walk.config.script
    if script is not None:
        index = walk.calls
        if index >= len(script.replies) and not script.repeat:
            return "", []
        reply = script.replies[index % len(script.replies)]

        def fill(text: str) -> str:
            return text.replace("{cycle}", str(cycle)).replace("{step}", str(step))

        calls = [
            (c.name, {k: fill(v) if isinstance(v, str) else v for k, v in c.arguments.items()})
            for c in reply.tool_calls
        ]
        return fill(reply.content), calls
    text = "x" * (assumptions.answer_tokens * CHARS_PER_TOKEN)
    last = min(assumptions.calls_per_cycle, walk.config.max_steps_per_cycle)
    if step >= last:
        return text, []
    return text, [("write", {"value": "x" * assumptions.tool_call_chars})]


def _completion_tokens(config: RunConfig, content: str, assumptions: Assumptions) -> int:
    """What an answer counts: the scripted backend reports its words; a model, the
    assumed answer length."""
    if config.script is not None:
        return len(content.split())
    return assumptions.answer_tokens


def plan_lines(plan: ExperimentPlan) -> list[str]:
    """The plan as the terminal shows it."""
    lines = [f"experiment {plan.experiment}: {len(plan.runs)} run(s), before anything runs"]
    lines.append(
        f"{'RUN':<40}  {'CYCLES':>6}  {'CALLS':>6}  {'PROMPT TOK':>11}  {'COMPL TOK':>10}  "
        f"{'COST ' + COST_UNIT:>10}"
    )
    for run in plan.runs:
        shown = f"{run.cost:.4f}" if run.cost is not None else "unknown"
        lines.append(
            f"{run.run_id[:40]:<40}  {run.cycles:>6}  {run.calls:>6}  "
            f"{run.prompt_tokens:>11,}  {run.completion_tokens:>10,}  {shown:>10}"
        )
        if run.stopped_by:
            lines.append(f"  its budget stops it at {run.stopped_by}")
    cost = plan.cost
    total = "unknown" if cost is None else f"{cost:.4f} {COST_UNIT}"
    if cost is not None and plan.unpriced:
        total = f"at least {total} ({plan.unpriced} run(s) without a price)"
    lines.append(f"in all: {plan.calls:,} LLM calls, {plan.tokens:,} tokens, cost {total}")
    if plan.budget_note:
        lines.append(plan.budget_note)
    lines.append("assumptions:")
    lines += [f"  - {line}" for line in plan.assumptions.lines()]
    return lines
