"""A model checked by the LLM worker for the CLI, before anything is recorded: the
model a query asks (``contreact query --model``), the model a run's history compaction
asks (``history.model``). The check travels as an assessment job's calls do
(``contreact_bus.assessments.calls``: a gate and a reply list under the caller's own
id), so it is answered by the worker that would make the call, on the same hosts."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import redis.asyncio as aioredis

from contreact_bus.assessments import calls
from contreact_events.catalog.run import ModelChecked
from contreact_events.config import RunConfig
from contreact_events.names import check_job_id
from contreact_events.wire.tasks import LLMTask


async def worker_call(
    redis: aioredis.Redis, task: LLMTask, timeout_s: float, queue_wait_s: float | None
) -> Any:
    """Send ``task`` (a check or a chat with ``reply_to``), wait for the worker's answer;
    the answer as an event (``ModelChecked``, ``LLMResponded``, ``LLMFailed``), or None
    when none came in time."""
    assert task.reply_to is not None
    await calls.send_call(redis, task)
    try:
        reply = await calls.wait_reply(
            redis, task.reply_to, task.task_id, timeout_s, queue_wait_s=queue_wait_s
        )
    finally:
        await calls.close_call(redis, task.reply_to)
    return None if reply is None else reply.to_event(datetime.now(UTC))


async def compaction_model_problem(
    redis: aioredis.Redis, config: RunConfig, wait_s: float
) -> str | None:
    """Why the run's ``history.model`` cannot summarise (not on its host, say), in one
    line with the fix; None when it can, or when the run's own model summarises (its
    model check covers it)."""
    rule = config.history
    if rule.policy != "compact" or rule.model is None or rule.model == config.model_name:
        return None
    hosts = config.llm_hosts()
    client = config.openai_client_config if config.backend == "openai" else None
    job = check_job_id(config.run_id, uuid.uuid4().hex[:12])
    task = LLMTask(
        kind="check",
        task_id=f"{job}/check",
        run_id=config.run_id,
        backend=config.backend,
        model=rule.model,
        host=hosts[0],
        hosts=hosts,
        api_key_env=client.api_key_env if client else None,
        timeout_s=client.timeout_s if client else config.ollama_client_config.timeout_s,
        connect_timeout_s=(
            client.connect_timeout_s if client else config.ollama_client_config.connect_timeout_s
        ),
        script=config.script,
        deadline=datetime.now(UTC) + timedelta(seconds=wait_s),
        reply_to=job,
    )
    checked = await worker_call(redis, task, wait_s, None)
    if not isinstance(checked, ModelChecked):
        return f"no LLM worker checked history.model {rule.model} within {wait_s:.0f} s"
    if not checked.ok:
        return f"history.model {rule.model} cannot summarise this run's history: {checked.detail}"
    return None
