"""Exchange analyses are spend, through the real LLM worker on a real Redis
(``tests.support.bus_run``): with the scripted analysis model, the worker prices each
call with the price of ``cognition.model`` the task carries; on the OpenAI-compatible
stand-in (a real socket, the real ``openai`` client), it records the provider's own
cost. The run's spend (``show``) holds the agent's calls and the analyses; rebuild and
replay are exact."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.run_log import RunLog
from contreact_cli.commands.inspect import rebuild, replay
from contreact_cli.commands.runs import show_state
from contreact_cli.settings import CLISettings
from contreact_events.catalog.cognition import OperatorMessageAnalyzed
from contreact_events.catalog.cycle import LLMResponded
from contreact_events.config.spend import ModelPrice
from contreact_events.core.fold import fold_all
from tests.support.bus_run import BusRun, bus_run
from tests.support.fake_openai import FakeOpenAI, running_fake_openai
from tests.support.sim import make_config

pytestmark = pytest.mark.redis

GOOD = {
    "intent": "request",
    "context_type": "new",
    "confidence": 0.8,
    "persistence_score": 0.7,
    "summary": "The operator asks the agent to go on.",
    "relevant_memories": [],
    "reasoning": "The reply tells the agent what to do.",
}
ASK: dict[str, Any] = {
    "tool_calls": [
        {"name": "send_message_to_operator", "arguments": {"message": "cycle {cycle}: go on?"}}
    ]
}
AGENT = "agent-model"
ANALYST = "analyst-model"
ANALYST_PRICE = {"input": 3.0, "output": 15.0}


@pytest.fixture
async def bus(aredis: aioredis.Redis, redis_url: str, tmp_path: Path) -> BusRun:
    return await bus_run(aredis, redis_url, tmp_path)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai([AGENT, ANALYST]) as server:
        yield server


async def exact(bus: BusRun, run_id: str, events: list[Any]) -> None:
    settings = CLISettings(redis_url=bus.llm.redis_url, data_dir=bus.memory.data_dir)
    report = await rebuild(settings, run_id)
    assert report.equal is True, report.comparison
    replayed, _, divergence = await replay(settings, run_id)
    assert (replayed, divergence) == (len(events), None)


async def test_the_worker_prices_a_scripted_analysis_with_the_analysis_models_price(
    bus: BusRun,
) -> None:
    config = make_config(
        run_id="spend-scripted",
        model_name=AGENT,
        cycle_count=2,
        cognition={"analysis": "model", "model": ANALYST},
        prices={ANALYST: ANALYST_PRICE},  # the agent's model has no price: unknown
        script={
            "replies": [ASK, {"content": "cycle {cycle}: asked"}],
            "repeat": True,
            "analysis_replies": [{"content": json.dumps(GOOD)}],
        },
    ).model_dump(mode="json")
    await bus.submit(config)
    await bus.settle()
    events = await RunLog(bus.redis).events("spend-scripted")
    state = fold_all(events)
    assert state.status == "completed"
    analysed = [e for e in events if isinstance(e, OperatorMessageAnalyzed)]
    assert len(analysed) == 2 and all(e.fallback_reason is None for e in analysed)
    price = ModelPrice.model_validate(ANALYST_PRICE)
    for event in analysed:
        usage = event.usage
        assert usage is not None and usage.prompt_tokens > 0 and usage.completion_tokens > 0
        assert usage.cost_source == "price_table"
        assert usage.cost == pytest.approx(price.cost(usage.prompt_tokens, usage.completion_tokens))
    agent_calls = [e for e in events if isinstance(e, LLMResponded)]
    assert all(e.usage.cost is None for e in agent_calls)  # no price, no provider figure
    analysed_cost = sum(e.usage.cost or 0.0 for e in analysed if e.usage is not None)
    assert state.spent_cost == pytest.approx(analysed_cost)
    assert state.uncosted_calls == len(agent_calls)
    usages = [e.usage for e in agent_calls] + [e.usage for e in analysed if e.usage is not None]
    assert state.spent_tokens == sum(u.prompt_tokens + u.completion_tokens for u in usages)
    await exact(bus, "spend-scripted", events)


async def test_the_providers_own_cost_of_an_analysis_is_recorded_and_shown(
    bus: BusRun, fake: FakeOpenAI
) -> None:
    fake.structured, fake.structured_first, fake.structured_cost = (lambda _: GOOD), True, 0.003
    for _ in range(2):  # two cycles: ask, then reflect
        fake.reply("", [("send_message_to_operator", {"message": "go on?"})], cost=0.01)
        fake.reply("I asked and went on.", cost=0.01)
    config = make_config(
        run_id="spend-openai",
        model_name=AGENT,
        cycle_count=2,
        backend="openai",
        openai_client_config={"base_url": fake.base_url, "api_key_env": None},
        cognition={"analysis": "model", "model": ANALYST},
        prices={ANALYST: ANALYST_PRICE},  # the provider's figure comes first
    ).model_dump(mode="json")
    await bus.submit(config)
    await bus.settle()
    events = await RunLog(bus.redis).events("spend-openai")
    state = fold_all(events)
    assert state.status == "completed", state.failure_reason
    analysed = [e for e in events if isinstance(e, OperatorMessageAnalyzed)]
    assert [(e.usage.cost, e.usage.cost_source) for e in analysed if e.usage] == [
        (0.003, "provider"),
        (0.003, "provider"),
    ]
    asked = [r["model"] for r in fake.chat_requests() if "response_format" in r]
    assert asked == [ANALYST, ANALYST]
    assert state.spent_cost == pytest.approx(4 * 0.01 + 2 * 0.003)
    assert state.uncosted_calls == 0
    lines: list[str] = []
    show_state(state, lines.append, as_json=False)
    assert any("spend: $0.0460 USD" in line for line in lines), lines
    await exact(bus, "spend-openai", events)
