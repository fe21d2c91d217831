"""What the pool tests (Ollama hosts and OpenAI-compatible servers) send a worker: a
chat task of a run over a pool, and the worker's settings with each host's limits."""

from __future__ import annotations

from typing import Any

from contreact_events.catalog.chat import ChatMessage
from contreact_events.wire.tasks import LLMTask
from contreact_llm.settings import LLMWorkerSettings


def pool_chat(
    run_id: str, pool: tuple[str, ...], backend: str, content: str, step: int = 1, **extra: Any
) -> LLMTask:
    """A run's chat call at ``step`` of cycle 1, on ``pool`` (its first host named)."""
    return LLMTask(
        kind="chat",
        task_id=f"{run_id}/c1/s{step}",
        run_id=run_id,
        backend=backend,
        model="m",
        host=pool[0],
        hosts=pool,
        connect_timeout_s=2.0,
        timeout_s=30.0,  # guards a hang only: the stand-ins answer at once
        messages=(ChatMessage(role="user", content=content),),
        **extra,
    )


def pool_worker(
    redis_url: str, name: str, pool: tuple[str, ...], parallel: int, max_loaded: int, **changes: Any
) -> LLMWorkerSettings:
    """A worker's settings: every host of ``pool`` with these limits, quick polls."""
    fields: dict[str, Any] = {
        "redis_url": redis_url,
        "consumer_name": name,
        "hosts": {host: {"parallel": parallel, "max_loaded_models": max_loaded} for host in pool},
        "poll_s": 0.1,
        "backoff_base_s": 0.001,
        **changes,
    }
    return LLMWorkerSettings(**fields)
