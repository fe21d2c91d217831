"""A pool of OpenAI-compatible servers (``openai_client_config.base_urls``): validated
with one line naming the problem, a config with one ``base_url`` unchanged in meaning,
and the pool's hosts are what the run's calls may go to."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from contreact_events.catalog.run import RunRequested
from contreact_events.config import RunConfig
from contreact_events.config.errors import describe_validation_error
from contreact_events.core.fold import fold_all
from contreact_events.core.outbox import pending_tasks
from contreact_events.wire.tasks import LLMTask
from contreact_llm.scheduling.pool import all_down

POOL = ["http://gpu1:8000/v1", "http://gpu2:8000/v1/"]


def config(**openai: object) -> RunConfig:
    return RunConfig.model_validate(
        {
            "run_id": "r1",
            "model_name": "m",
            "cycle_count": 1,
            "backend": "openai",
            "openai_client_config": openai,
        }
    )


def problem(**openai: object) -> str:
    with pytest.raises(ValidationError) as caught:
        config(**openai)
    return describe_validation_error(caught.value, RunConfig)


def test_a_pool_of_servers_is_the_runs_hosts_in_the_order_given() -> None:
    pooled = config(base_urls=POOL, api_key_env=None)
    assert pooled.llm_hosts() == ("http://gpu1:8000/v1", "http://gpu2:8000/v1")
    assert pooled.openai_client_config.pool == pooled.llm_hosts("openai")


def test_a_config_with_one_base_url_means_what_it_meant() -> None:
    recorded = {"base_url": "http://vllm:8000/v1", "api_key_env": None, "timeout_s": 60.0}
    one = config(**recorded)
    assert one.llm_hosts() == ("http://vllm:8000/v1",)
    assert one.openai_client_config.base_urls == ()
    again = RunConfig.model_validate(one.model_dump(mode="json"))
    assert again == one


@pytest.mark.parametrize(
    ("urls", "expected"),
    [
        (["http://gpu1:8000/v1", "gpu2:8000"], "'gpu2:8000' is not an http(s) URL (e.g. "),
        (["http://gpu1:8000/v1", "http://gpu1:8000/v1/"], "base_urls must not repeat a URL"),
        (["http://user:secret@gpu1:8000/v1"], "user:password"),
    ],
)
def test_a_bad_pool_is_refused_with_one_line(urls: list[str], expected: str) -> None:
    line = problem(base_urls=urls)
    assert "\n" not in line and expected in line
    assert "secret" not in line


def test_a_pool_has_at_most_64_servers() -> None:
    line = problem(base_urls=[f"http://gpu{n}:8000/v1" for n in range(65)])
    assert "\n" not in line and "openai_client_config.base_urls" in line and "64" in line


def test_a_pool_of_openai_servers_all_down_names_its_own_fix() -> None:
    line = all_down("m", tuple(POOL), {POOL[0]: "refused"}, "openai")
    assert line.startswith("every host of the pool for model 'm' is down (")
    assert "openai_client_config.base_urls" in line and "ollama" not in line


def test_the_pools_connect_timeout_reaches_every_task_of_the_run() -> None:
    """``openai_client_config.connect_timeout_s`` is what the worker's calls and checks
    of an OpenAI-compatible run wait to reach a server (Ollama's is its own)."""
    pooled = RunConfig.model_validate(
        {
            "run_id": "r1",
            "model_name": "m",
            "cycle_count": 1,
            "backend": "openai",
            "openai_client_config": {"base_urls": POOL, "connect_timeout_s": 1.5},
            "ollama_client_config": {"connect_timeout_s": 9.0},
        }
    )
    now = datetime.now(UTC)
    requested = RunRequested(event_id="e1", run_id="r1", ts=now, correlation_id="r1", config=pooled)
    state = fold_all([requested])
    (check,) = [task for task in pending_tasks(state) if isinstance(task, LLMTask)]
    assert check.hosts == pooled.llm_hosts() and check.connect_timeout_s == 1.5
