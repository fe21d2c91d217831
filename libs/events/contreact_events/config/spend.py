"""What a run may spend and what a model's tokens cost: ``budget`` and ``prices``. Pure.

```yaml
budget: {tokens: 200000, cost: 0.50, wall_s: 3600}   # any of the three; all optional
prices:                                              # or a file name: prices.yaml
  openai/gpt-5: {input: 1.25, output: 10.0}          # per million tokens
```

A call's cost is the provider's own figure where it gives one (OpenRouter's usage
accounting), else the price of the run's model in ``prices`` times its tokens, else
unknown (``None``: never zero). A budget is checked before every LLM call: a run that
has reached it ends as ``stopped: budget`` (``RunStopped``), so it overshoots by at most
the one call that reached it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import Field, StrictFloat, StrictInt

from contreact_events.config.fields import Strict

COST_UNIT = "USD"
"""What a cost is counted in: OpenRouter's credits are dollars; a price table is too."""
TOKENS_PER_MILLION = 1_000_000


class ModelPrice(Strict):
    """One model's price, per million tokens."""

    input: StrictFloat | StrictInt = Field(ge=0)
    """Per million prompt (input) tokens."""
    output: StrictFloat | StrictInt = Field(ge=0)
    """Per million completion (output) tokens."""

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * float(self.input) + completion_tokens * float(self.output)
        ) / TOKENS_PER_MILLION


class Budget(Strict):
    """Limits on what a run (or an experiment) spends; ``null`` leaves one unlimited."""

    tokens: StrictInt | None = Field(default=None, gt=0)
    """Prompt plus completion tokens of every LLM call."""
    cost: StrictFloat | StrictInt | None = Field(default=None, gt=0)
    """In ``COST_UNIT``: the calls whose cost is known (a call of unknown cost counts
    nothing here, and the run's spend says how many there were)."""
    wall_s: StrictFloat | StrictInt | None = Field(default=None, gt=0)
    """Seconds from the run's start (its ``RunStarted``) to the input being decided."""

    @property
    def empty(self) -> bool:
        return self.tokens is None and self.cost is None and self.wall_s is None


def price_table_shape(value: Any) -> Any:
    """A ``prices`` value that is not a table of model: {input, output} is refused in
    one line (pydantic's own report would list every branch it tried)."""
    if value is None:
        return value
    if not isinstance(value, dict):
        raise ValueError(
            "prices must be a table of model: {input: N, output: N} (per million tokens) "
            f"or a file holding one, not a {type(value).__name__}"
        )
    for model, price in value.items():
        if not isinstance(price, dict):
            raise ValueError(
                f"prices.{model} must be {{input: N, output: N}} per million tokens, "
                f"not a {type(price).__name__}"
            )
    return value


CHARS_PER_TOKEN = 4
"""A token is about four characters of English text: the estimate ``experiment plan``
works with, and the token count the scripted backend reports for a prompt."""


def estimated_tokens(text: str) -> int:
    """About how many tokens ``text`` is (``CHARS_PER_TOKEN``), rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def message_text(content: str, tool_calls: Iterable[tuple[str, Mapping[str, Any]]] = ()) -> str:
    """What one message puts before a model: its text and each tool call's name and
    JSON arguments."""
    calls = "".join(
        name + json.dumps(dict(arguments), default=str) for name, arguments in tool_calls
    )
    return content + calls


def prompt_tokens(texts: Iterable[str], tools: Sequence[Mapping[str, Any]]) -> int:
    """About how many tokens a prompt of these messages (``message_text``) and tool
    definitions is: what the scripted backend reports reading, and what
    ``experiment plan`` counts for every call it foresees."""
    return estimated_tokens("".join(texts) + json.dumps([dict(t) for t in tools], default=str))


def budget_reached(
    budget: Budget, *, tokens: int, cost: float, elapsed_s: float | None
) -> str | None:
    """Which limit of ``budget`` the spend so far has reached, in words; None: none."""
    if budget.tokens is not None and tokens >= budget.tokens:
        return f"{tokens} tokens reached the budget of {budget.tokens}"
    if budget.cost is not None and cost >= budget.cost:
        return f"cost {cost:.6g} {COST_UNIT} reached the budget of {budget.cost:g} {COST_UNIT}"
    if budget.wall_s is not None and elapsed_s is not None and elapsed_s >= budget.wall_s:
        return f"{elapsed_s:.1f} s of wall time reached the budget of {budget.wall_s:g} s"
    return None


def cost_text(cost: float, uncosted_calls: int) -> str:
    """A spend as shown: ``$0.0123``; ``?`` when no call's cost is known; ``>=$0.01``
    when some are not (the sum is then a lower bound). Never a zero for unknown."""
    if uncosted_calls and not cost:
        return "?"
    shown = f"${cost:.4f}" if cost < 100 else f"${cost:,.2f}"
    return f">={shown}" if uncosted_calls else shown


def budget_text(budget: Budget) -> str:
    """``200,000 tokens, 0.5 USD, 3600 s``: the limits set."""
    parts = []
    if budget.tokens is not None:
        parts.append(f"{budget.tokens:,} tokens")
    if budget.cost is not None:
        parts.append(f"{budget.cost:g} {COST_UNIT}")
    if budget.wall_s is not None:
        parts.append(f"{budget.wall_s:g} s")
    return ", ".join(parts) or "none"


def missing_price(prices: dict[str, ModelPrice] | None, model_name: str) -> str | None:
    """One line when a price table is given and lacks the run's model, else None."""
    if prices is None or model_name in prices:
        return None
    return (
        f"the price table has no price for model '{model_name}': add "
        f"'{model_name}: {{input: N, output: N}}' (per million tokens), or the cost of its "
        "calls is recorded as unknown unless the provider reports it"
    )
