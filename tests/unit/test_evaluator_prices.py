"""An evaluator's calls are priced like the run's (issue 33, part 3's gap): an evaluator
taken from a run carries its model's price from the run's price table, its chat tasks
carry it to the LLM worker, and the worker prices the answer with it when the provider
gives no figure (the cost then lands in ``RunAssessed.usage``, as a run's in
``LLMResponded.usage``). A model the table lacks stays unknown, never zero."""

from __future__ import annotations

from contreact_assessor.questions import evaluator_task
from contreact_bus.assessments.evaluators import Rating, evaluator_from_config
from contreact_events.catalog.chat import AssistantMessage, ChatMessage, LLMUsage
from contreact_llm.backends import ChatReply
from contreact_llm.handler import priced
from tests.support.sim import make_config

PRICES = {"test-model": {"input": 2.0, "output": 8.0}}


def rating_of(prices: dict[str, dict[str, float]] | None) -> Rating:
    evaluator = evaluator_from_config(make_config(prices=prices), "scripted")
    return Rating(run_id="run-1", instrument="pei", repeat=1, job_id="job-1", evaluator=evaluator)


def answer(tokens_in: int, tokens_out: int, **cost: object) -> ChatReply:
    usage = LLMUsage.model_validate(
        {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, **cost}
    )
    return ChatReply(message=AssistantMessage(content="Level 3."), usage=usage, model="m")


def test_an_evaluators_call_is_priced_from_the_runs_price_table() -> None:
    rating = rating_of(PRICES)
    task = evaluator_task(rating, (ChatMessage(role="user", content="Rate."),), "t1", None)
    assert task.price is not None
    usage = priced(answer(1_000_000, 500_000), task.price).usage
    assert usage.cost == 2.0 + 4.0 and usage.cost_source == "price_table"


def test_an_evaluator_the_table_lacks_costs_unknown() -> None:
    task = evaluator_task(rating_of(None), (ChatMessage(role="user", content="Rate."),), "t1", None)
    assert task.price is None
    usage = priced(answer(1000, 10), task.price).usage
    assert usage.cost is None and usage.cost_source is None


def test_the_providers_own_figure_wins() -> None:
    rating = rating_of(PRICES)
    task = evaluator_task(rating, (ChatMessage(role="user", content="Rate."),), "t1", None)
    reply = answer(1000, 10, cost=0.5, cost_source="provider")
    usage = priced(reply, task.price).usage
    assert (usage.cost, usage.cost_source) == (0.5, "provider")
