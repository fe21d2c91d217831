"""Spend in the core: each call's cost folded into the run's spend, a budget that ends
the run as ``stopped: budget`` before the call past it, and the bad inputs of
``budget`` and ``prices`` refused in one line."""

from __future__ import annotations

import pytest

from contreact_events.catalog.chat import AssistantMessage, LLMUsage
from contreact_events.config import parse_run_config
from contreact_events.config.spend import (
    ModelPrice,
    budget_reached,
    cost_text,
    missing_price,
)
from contreact_events.exceptions import ConfigError
from contreact_events.history.replay import replay_check
from contreact_events.history.run_summary import run_summary
from contreact_llm.backends import ChatReply
from contreact_llm.handler import priced
from tests.support.sim import Sim, make_config, say

WRITE = say("", ("write", {"key": "k", "value": "v"}))
"""An answer that calls a tool: the cycle goes on, so only the budget can end it."""


def drive(sim: Sim, costs: list[float | None], *, tokens: int = 10) -> None:
    """Answer each LLM call with a write and the given cost, until the run ends."""
    sim.start()
    for cost in costs:
        if sim.state.terminal:
            return
        usage: dict[str, object] = {"prompt_tokens": tokens, "completion_tokens": 5}
        if cost is not None:
            usage |= {"cost": cost, "cost_source": "provider"}
        sim.answer_llm(WRITE, **usage)
        while sim.tasks and not sim.state.terminal and sim.state.phase != "awaiting_llm":
            sim.answer_memory()


def test_a_run_stops_at_its_cost_budget_before_the_call_past_it() -> None:
    sim = Sim(make_config(cycle_count=3, max_steps_per_cycle=25, budget={"cost": 0.05}))
    drive(sim, [0.02] * 10)
    state = sim.state
    assert state.status == "stopped"
    assert state.llm_calls == 3  # 0.02, 0.04, then 0.06 reached 0.05: no fourth call
    assert state.spent_cost == pytest.approx(0.06)
    stop = sim.log[-1]
    assert stop.type == "RunStopped"
    assert stop.detail == "cost 0.06 USD reached the budget of 0.05 USD"
    assert [e.type for e in sim.log].count("LLMRequested") == 3
    assert not sim.tasks  # nothing more is asked of any worker
    summary = run_summary(state)
    assert summary.failure_reason == "stopped: budget: cost 0.06 USD reached the budget of 0.05 USD"
    assert summary.cost == pytest.approx(0.06) and summary.uncosted_calls == 0
    report = replay_check(sim.log)
    assert report.ok and report.state == state


def test_a_run_stops_at_its_token_budget() -> None:
    sim = Sim(make_config(cycle_count=3, budget={"tokens": 40}))
    drive(sim, [None] * 10)
    assert sim.state.status == "stopped"
    assert sim.state.spent_tokens == 45  # three calls of 15: the third reached 40
    assert sim.state.llm_calls == 3


def test_a_run_stops_at_its_wall_time_budget_by_the_logged_times() -> None:
    # the sim's clock moves one second per input: RunStarted at 2 s, each step 2 s more
    sim = Sim(make_config(cycle_count=3, budget={"wall_s": 5}))
    drive(sim, [None] * 10)
    state = sim.state
    assert state.status == "stopped"
    stop = sim.log[-1]
    assert state.started_at is not None
    assert (stop.ts - state.started_at).total_seconds() >= 5
    assert "wall time reached the budget of 5 s" in stop.detail


def test_calls_of_unknown_cost_are_counted_never_summed_as_zero() -> None:
    sim = Sim(make_config(cycle_count=1, budget={"cost": 0.05}))
    drive(sim, [None, 0.01, None])
    state = sim.state
    assert state.status == "running"  # 0.01 known, two unknown: the budget is not reached
    assert state.uncosted_calls == 2 and state.spent_cost == pytest.approx(0.01)
    assert cost_text(state.spent_cost, state.uncosted_calls) == ">=$0.0100"
    assert cost_text(0.0, 3) == "?"
    assert cost_text(0.0, 0) == "$0.0000"


def test_a_run_without_a_budget_is_not_stopped() -> None:
    sim = Sim(make_config(cycle_count=1, max_steps_per_cycle=4))
    drive(sim, [5.0] * 10)
    assert sim.state.status != "stopped" and sim.state.llm_calls == 5  # 4 + the final call


def test_a_forks_spend_is_its_own() -> None:
    """RunStarted starts the count: what a fork's copied prefix cost is its parent's."""
    sim = Sim(make_config(cycle_count=1))
    drive(sim, [0.5])
    before = sim.state.spent_cost
    assert before == pytest.approx(0.5)
    started = next(e for e in sim.log if e.type == "RunStarted")
    from contreact_events.core.fold import fold_all

    again = fold_all([*sim.log[: sim.log.index(started)], started])
    assert (again.spent_cost, again.started_at) == (0.0, started.ts)


@pytest.mark.parametrize(
    ("budget", "words"),
    [
        ({"cost": -1}, "'budget.cost' input should be greater than 0"),
        ({"tokens": "lots"}, "'budget.tokens' input should be a valid integer"),
        ({"wall_s": 0}, "'budget.wall_s' input should be greater than 0"),
        ({"dollars": 3}, "unknown key 'budget.dollars'"),
        ("0.5", "'budget' input should be a valid dictionary"),
    ],
)
def test_a_bad_budget_is_refused_in_one_line(budget: object, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_config(budget=budget)
    message = str(caught.value)
    assert words in message.lower() and "\n" not in message


@pytest.mark.parametrize(
    ("prices", "words"),
    [
        (5, "prices must be a table of model: {input: n, output: n}"),
        (["a", "b"], "not a list"),
        ({"test-model": 2.5}, "prices.test-model must be {input: n, output: n}"),
        ({"test-model": {"input": -1, "output": 1}}, "greater than or equal to 0"),
    ],
)
def test_a_price_table_that_is_not_a_table_is_refused_in_one_line(
    prices: object, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        make_config(prices=prices)
    message = str(caught.value)
    assert words in message.lower() and "\n" not in message


def test_a_price_table_without_the_runs_model_says_so_in_one_line() -> None:
    config = make_config(prices={"other-model": {"input": 1, "output": 2}})
    line = missing_price(config.prices, config.model_name)
    assert line is not None and "\n" not in line
    assert "no price for model 'test-model'" in line and "recorded as unknown" in line
    assert config.price is None
    assert missing_price(None, "test-model") is None  # no table: nothing to say
    priced_config = make_config(prices={"test-model": {"input": 1, "output": 2}})
    assert missing_price(priced_config.prices, "test-model") is None
    assert priced_config.price == ModelPrice(input=1, output=2)


def reply(**usage: object) -> ChatReply:
    return ChatReply(AssistantMessage(content="hi"), LLMUsage.model_validate(usage), "m")


def test_the_worker_prices_a_call_from_the_table_only_without_a_provider_figure() -> None:
    price = ModelPrice(input=2.0, output=8.0)  # per million tokens
    table = priced(reply(prompt_tokens=1_000, completion_tokens=500), price).usage
    assert table.cost == pytest.approx(0.006) and table.cost_source == "price_table"
    own = priced(reply(prompt_tokens=1_000, cost=0.25, cost_source="provider"), price).usage
    assert (own.cost, own.cost_source) == (0.25, "provider")
    unknown = priced(reply(prompt_tokens=1_000), None).usage
    assert (unknown.cost, unknown.cost_source) == (None, None)


def test_budget_reached_names_the_first_limit_reached() -> None:
    config = make_config(budget={"tokens": 100, "cost": 1, "wall_s": 60})
    assert config.budget is not None
    assert budget_reached(config.budget, tokens=99, cost=0.99, elapsed_s=59.9) is None
    assert "100 tokens" in (budget_reached(config.budget, tokens=100, cost=0, elapsed_s=0) or "")
    assert "cost 1 USD" in (budget_reached(config.budget, tokens=0, cost=1, elapsed_s=0) or "")
    assert "60.0 s" in (budget_reached(config.budget, tokens=0, cost=0, elapsed_s=60) or "")


def test_the_config_round_trips_through_the_run_request() -> None:
    data = make_config(budget={"cost": 0.5}, prices={"m": {"input": 1, "output": 2}})
    again = parse_run_config(data.model_dump(mode="json"))
    assert again == data


def test_the_dataframes_and_the_report_show_the_spend_per_call_cycle_run_and_model() -> None:
    from contreact_analysis.frames.tables import build_frames
    from contreact_analysis.report import build_report, render_report
    from tests.unit.test_saved_logs import FIXTURES, load

    events = load(FIXTURES / "runlog-v5-budget-stop.jsonl")
    frames = build_frames({"fixture-budget-stop": events})
    (run,) = frames.runs.to_dict("records")
    assert (run["status"], run["uncosted_calls"]) == ("stopped", 1)
    assert run["cost"] == pytest.approx(0.055)
    assert str(run["failure_reason"]).startswith("stopped: budget: cost 0.055 USD")
    calls = frames.events[frames.events["type"] == "LLMResponded"]["cost"]
    assert calls.isna().tolist() == [False, False, True, False]
    assert calls.dropna().tolist() == [0.02, 0.015, 0.02]
    assert frames.cycles["cost"].sum() == pytest.approx(0.055)
    assert frames.cycles["uncosted_calls"].sum() == 1
    html = render_report(build_report(frames, title="spend", command="c", resamples=99))
    assert "Spend in all: 31000 tokens, &gt;=$0.0550 USD" in html  # 5000+...+8000 + 4 x 1250
