"""The embedded model of `make demo` (Gemma 3 270M through llama.cpp, in the LLM
worker) rates a run through a real rq worker. The 270M base model may well answer
something that is no rating: then the record says ``unparseable`` (or ``refused``)
with its raw text, never a guessed level. Either shows on the run's dashboard page."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis
from fastapi.testclient import TestClient

from contreact_bus import assessments
from contreact_bus.assessments.evaluators import named_evaluator
from contreact_bus.assessments.queueing import JobPolicy, Wanted, enqueue
from contreact_events.catalog.assessment import RunAssessed
from contreact_events.config import EMBEDDED_HOST
from contreact_ui.app import create_app
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.settings import UISettings
from tests.support.assessing import (
    archive_runs,
    assessor_env,
    finished_run,
    llm_worker,
    rq_queue,
    start_assessor,
    wait_process,
)
from tests.support.inbox import use_one_shard

pytestmark = [pytest.mark.slow, pytest.mark.redis]


async def test_the_demos_embedded_model_rates_a_run(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    await use_one_shard(aredis)
    (state,) = archive_runs(tmp_path / "runs", [finished_run("demo-run", "gemma3:270m", "x")])
    judge = named_evaluator("gemma3:270m", "embedded")
    assert judge.hosts == (EMBEDDED_HOST,)
    judge = judge.model_copy(update={"options": {**judge.options, "num_predict": 48}})
    with rq_queue(redis_url) as q:
        await enqueue(aredis, q, [Wanted(state.run_id, "pei", judge)], policy=JobPolicy(retries=0))
        async with llm_worker(redis_url):
            env = assessor_env(redis_url, tmp_path, CONTREACT_ASSESS_REPLY_TIMEOUT_S="300")
            assert await wait_process(start_assessor(env), timeout_s=400) == 0
    (record,) = (await assessments.read_assessments(aredis, tmp_path / "runs", ["demo-run"]))[
        "demo-run"
    ]
    assert isinstance(record, RunAssessed), record
    assert record.backend == "embedded" and record.raw_answer.strip()
    assert record.status in ("rated", "unparseable", "refused", "off_scale")
    assert (record.value is not None) == (record.status == "rated")
    assert record.usage.completion_tokens > 0
    # ... and the rating, or the recorded "unparseable", shows in the dashboard
    await rebuild(tmp_path / "ui.db", aredis, tmp_path / "runs")
    app = create_app(UISettings(data_dir=tmp_path, redis_url=redis_url, project=False))
    with TestClient(app) as client:
        (shown,) = client.get("/runs/demo-run.json").json()["assessments"]
        assert (shown["status"], shown["evaluator_model"]) == (record.status, "gemma3:270m")
        assert 'id="run-assessments"' in client.get("/runs/demo-run").text
