"""Where an LLM task goes: model checks to ``tasks:llm``, chat tasks to the stream of
their route (backend, model, host pool), so that a slow model's calls wait in their
own line and never in front of another model's.

The producer registers each route it sends to (``LLM_ROUTES``) with the runs that use
it, and rings the workers' wake channel, in the caller's pipeline: the stream entry
first, then the registrations, then the ring, so a worker that hears of a route finds
its entry there.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import orjson
import redis.asyncio as aioredis
from pydantic import BaseModel
from redis.asyncio.client import Pipeline

from contreact_bus.replies import text_map
from contreact_bus.streams.task_stream import TaskStream
from contreact_events.config.hosts import CREDENTIALS_FIX, has_credentials
from contreact_events.names import (
    LLM_ROUTES,
    LLM_TASKS_STREAM,
    LLM_WAKE_CHANNEL,
    llm_route_runs_key,
    llm_route_stream,
)
from contreact_events.wire.tasks import LLMTask

_UNSAFE = re.compile(r"[^A-Za-z0-9._:/-]+")
ROUTE_WAKE_PREFIX = "route:"
"""A wake-up for a queued task names its route; one for a released slot, the worker."""
FREED_WAKE_PREFIX = "freed:"


@dataclass(frozen=True)
class Route:
    """The line a chat task waits in: one backend, one model, one pool of hosts; and
    whether it is a *background* line (assessment jobs' calls, ``reply_to`` set): a
    run's calls of the same model wait in their own line and go first."""

    backend: str
    model: str
    hosts: tuple[str, ...]
    background: bool = False

    @property
    def id(self) -> str:
        """Readable and stable: ``ollama/llama3:latest/1f0c2a9e`` (the hash is of the
        whole route, so two pools of the same model are two lines); a background line
        is ``assess/ollama/llama3:latest/...``."""
        parts: list[object] = [self.backend, self.model, list(self.hosts)]
        if self.background:
            parts.append("background")
        digest = hashlib.sha256(orjson.dumps(parts)).hexdigest()[:8]
        prefix = "assess/" if self.background else ""
        return f"{prefix}{self.backend}/{_UNSAFE.sub('_', self.model)[:80]}/{digest}"

    @property
    def stream(self) -> str:
        return llm_route_stream(self.id)

    def to_json(self) -> bytes:
        data: dict[str, object] = {
            "backend": self.backend,
            "model": self.model,
            "hosts": list(self.hosts),
        }
        if self.background:
            data["background"] = True
        return orjson.dumps(data)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Route:
        data = orjson.loads(raw)
        return cls(
            str(data["backend"]),
            str(data["model"]),
            tuple(data["hosts"]),
            bool(data.get("background", False)),
        )


def route_of(task: LLMTask) -> Route:
    """The task's line: a background one for calls no run's cycle waits on (assessment
    jobs' calls, and analyses of operator exchanges unless the memory policy makes the
    run wait for them: ``holds_cycle``), so a run's next call goes first. A host with
    credentials (``user:password@``) is refused: routes are stored and shown."""
    analysis = task.kind == "analysis" and not task.holds_cycle
    background = task.reply_to is not None or analysis
    hosts = task.hosts or (task.host,)
    if any(has_credentials(host) for host in hosts):  # a route is recorded, listed, logged
        raise ValueError(f"task {task.task_id}: {CREDENTIALS_FIX}")
    return Route(task.backend, task.model, hosts, background)


class RouteStream(TaskStream):
    """The producer side of one route's stream."""

    def __init__(self, redis: aioredis.Redis, route: Route) -> None:
        super().__init__(redis, route.stream)
        self.route = route

    async def send(self, message: BaseModel) -> bytes:
        async with self._redis.pipeline(transaction=False) as pipe:
            self.queue(pipe, message)
            entry_id, *_ = await pipe.execute()
        return entry_id if isinstance(entry_id, bytes) else str(entry_id).encode()

    def queue(self, pipe: Pipeline, message: BaseModel, raw: bytes | None = None) -> None:
        super().queue(pipe, message, raw)
        if getattr(message, "reply_to", None) is None:  # an evaluation keeps no model in use
            pipe.sadd(llm_route_runs_key(self.route.id), str(getattr(message, "run_id", "")))
        pipe.hset(LLM_ROUTES, self.route.id, self.route.to_json())
        pipe.publish(LLM_WAKE_CHANNEL, ROUTE_WAKE_PREFIX + self.route.id)


def llm_task_stream(redis: aioredis.Redis, task: LLMTask) -> TaskStream:
    """The stream an LLM task is sent to: checks to ``tasks:llm``, chats to their route's."""
    if task.kind == "check":
        return TaskStream(redis, LLM_TASKS_STREAM)
    return RouteStream(redis, route_of(task))


async def known_routes(redis: aioredis.Redis) -> dict[str, Route]:
    """Every route a chat task was ever sent to, by id."""
    return {
        rid: Route.from_json(raw) for rid, raw in text_map(await redis.hgetall(LLM_ROUTES)).items()
    }
