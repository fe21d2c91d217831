"""The embedder and `contreact corpus stats` after retention (issue 14, defect 2): an
ended run's log leaves Redis ``log_retention_s`` after it is archived, and both read it
from its archive, through the one reader (``contreact_bus.scope_logs``), so they count
the same corpus. Real Redis, real model, real archive files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import archive_path, write_archive
from contreact_bus.run_log import RunLog
from contreact_bus.runs import register_run
from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.inbox import Inbox
from contreact_bus.streams.serving import serve_batches
from contreact_bus.streams.task_stream import TaskStream
from contreact_cli.corpus_queries import corpus_stats
from contreact_cli.settings import CLISettings
from contreact_embedder.embedding_service import EmbeddingService
from contreact_embedder.handler import EmbedHandler
from contreact_embedder.settings import EmbedderSettings
from contreact_events.catalog import Event
from contreact_events.catalog.diversity import (
    ParagraphsAccepted,
    ParagraphsChecked,
)
from contreact_events.catalog.tool import ToolCallCompleted, ToolCallRequested
from contreact_events.names import EMBED_GROUP, EMBED_TASKS_STREAM, run_log_key
from contreact_events.wire.codec import message_from_fields
from contreact_events.wire.tasks import EmbedTask, InboxMessage
from tests.support.inbox import INBOX, use_one_shard

pytestmark = [pytest.mark.redis, pytest.mark.slow]

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
FAST = ConsumerSettings(block_ms=20, batch_size=32, reclaim_every_s=0.0)
EXPERIMENT = "tides"
SCOPE = f"experiment:{EXPERIMENT}"
TIDES = "The tide comes in twice a day because the moon pulls the oceans toward itself."
HARBOUR = "I sketched the harbour at dawn, counting the fishing boats that left the quay."
COMETS = "Comets carry ice from the edge of the solar system and melt as they near the sun."
OWN = "This cycle I listed the rivers I know and where each of them meets the open sea."
SECRET = "The lighthouse keeper's cat is named Barnacle and sleeps on the lamp room stairs."


@pytest.fixture(autouse=True)
async def _one_inbox_shard(aredis: aioredis.Redis) -> None:
    await use_one_shard(aredis)


@pytest.fixture(scope="session")
def service() -> EmbeddingService:
    return EmbeddingService()


def envelope(run_id: str, n: int) -> dict[str, Any]:
    return {
        "event_id": f"{run_id}-e{n}",
        "run_id": run_id,
        "ts": T0 + timedelta(seconds=n),
        "correlation_id": run_id,
    }


def accepted(service: EmbeddingService, run_id: str, cycle: int, text: str, n: int) -> list[Event]:
    """A cycle's answer checked and accepted into the experiment's corpus."""
    vector = tuple(service.embed(text).as_floats())
    return [
        ParagraphsChecked(
            **envelope(run_id, n),
            task_id=f"{run_id}-p{cycle}",
            cycle=cycle,
            attempt=1,
            paragraphs=(text,),
            vectors=(vector,),
            overall_similarity=0.0,
            is_unique=True,
        ),
        ParagraphsAccepted(
            **envelope(run_id, n + 1), cycle=cycle, attempt=1, scope=SCOPE, similarity=0.0
        ),
    ]


def memory_write(run_id: str, key: str, value: str, n: int) -> list[Event]:
    task_id = f"{run_id}-w{n}"
    return [
        ToolCallRequested(
            **envelope(run_id, n),
            task_id=task_id,
            cycle=1,
            step=1,
            index=0,
            tool_name="write",
            arguments={"key": key, "value": value},
        ),
        ToolCallCompleted(
            **envelope(run_id, n + 1), task_id=task_id, tool_name="write", output="ok"
        ),
    ]


async def start_run(aredis: aioredis.Redis, run_id: str, events: list[Event]) -> None:
    await register_run(aredis, run_id, EXPERIMENT)
    await RunLog(aredis).append(run_id, events)


async def end_and_expire(aredis: aioredis.Redis, archive_dir: Path, run_id: str) -> None:
    """What the orchestrator does when a run ends (archive the whole log), then what
    the retention does (the log leaves Redis)."""
    write_archive(archive_dir, run_id, await RunLog(aredis).events(run_id))
    await aredis.delete(run_log_key(run_id))


def check(task_id: str, run_id: str, text: str) -> EmbedTask:
    return EmbedTask(
        kind="paragraphs",
        task_id=task_id,
        run_id=run_id,
        cycle=2,
        text=text,
        model="all-MiniLM-L6-v2",
        scope=SCOPE,
        experiment=EXPERIMENT,
    )


def embedder(aredis: aioredis.Redis, service: EmbeddingService, data_dir: Path) -> EmbedHandler:
    """A new embedder process, as its settings would build it."""
    settings = EmbedderSettings(data_dir=data_dir)
    return EmbedHandler(service, aredis, Inbox(aredis, 1), settings.archive_dir)


async def answer(aredis: aioredis.Redis, handler: EmbedHandler, task: EmbedTask) -> Event:
    await TaskStream(aredis, EMBED_TASKS_STREAM).send(task)
    consumer = Consumer(aredis, EMBED_TASKS_STREAM, EMBED_GROUP, "w1", FAST)
    assert await serve_batches(consumer, EmbedTask, handler, burst=True) == 1
    entries: Any = await aredis.xrange(INBOX)
    messages = [message_from_fields(InboxMessage, fields) for _id, fields in entries]
    (reply,) = [m for m in messages if m.causation_id == task.task_id]
    return reply.to_event(T0)


async def stats(redis_url: str, data_dir: Path) -> dict[str, Any]:
    return await corpus_stats(CLISettings(redis_url=redis_url, data_dir=data_dir), None, EXPERIMENT)


async def test_a_restarted_embedder_checks_against_the_runs_whose_logs_expired(
    aredis: aioredis.Redis, redis_url: str, service: EmbeddingService, tmp_path: Path
) -> None:
    archive_dir = tmp_path / "runs"
    await start_run(
        aredis,
        "run-old",
        [
            *accepted(service, "run-old", 1, TIDES, 1),
            *accepted(service, "run-old", 2, HARBOUR, 3),
            *memory_write("run-old", "cat", SECRET, 5),
        ],
    )
    await start_run(aredis, "run-live", accepted(service, "run-live", 1, COMETS, 1))
    await end_and_expire(aredis, archive_dir, "run-old")
    assert not await aredis.exists(run_log_key("run-old"))

    restarted = embedder(aredis, service, tmp_path)
    checked = await answer(aredis, restarted, check("c1", "run-live", TIDES))
    assert isinstance(checked, ParagraphsChecked)
    assert not checked.is_unique, "the expired run's paragraph is repeated"
    assert [m.matched_id for m in checked.matches] == ["run-old/c1"]
    assert checked.corpus_chunks == 3

    listed = await stats(redis_url, tmp_path)
    assert listed["runs"] == ["run-live", "run-old"]
    assert listed["total_chunks"] == checked.corpus_chunks

    # search_memory is the asking run's own (a run's log leaves Redis only once it
    # ended): the embedder answers for an expired run from its archive, as
    # `contreact search --run` does.
    search = EmbedTask(
        kind="search",
        task_id="s1",
        run_id="run-old",
        cycle=3,
        text="what is the cat called",
        model="all-MiniLM-L6-v2",
        k=1,
    )
    found = await answer(aredis, restarted, search)
    assert isinstance(found, ToolCallCompleted) and found.ok
    assert "memory 'cat'" in found.output and "Barnacle" in found.output


async def test_a_running_embedder_reads_what_a_run_added_before_its_log_expired(
    aredis: aioredis.Redis, redis_url: str, service: EmbeddingService, tmp_path: Path
) -> None:
    """The embedder read the run's first cycle from Redis; the run accepted another
    paragraph, ended and expired before the next check: that check takes the rest
    from the archive, and reads the archive once."""
    archive_dir = tmp_path / "runs"
    await start_run(aredis, "run-old", accepted(service, "run-old", 1, TIDES, 1))
    await register_run(aredis, "run-live", EXPERIMENT)  # requested, no event yet
    running = embedder(aredis, service, tmp_path)
    first = await answer(aredis, running, check("c1", "run-live", COMETS))
    assert isinstance(first, ParagraphsChecked) and first.is_unique
    assert first.corpus_chunks == 1

    await RunLog(aredis).append("run-old", accepted(service, "run-old", 2, HARBOUR, 3))
    await end_and_expire(aredis, archive_dir, "run-old")
    second = await answer(aredis, running, check("c2", "run-live", HARBOUR))
    assert isinstance(second, ParagraphsChecked)
    assert [m.matched_id for m in second.matches] == ["run-old/c2"]
    assert second.corpus_chunks == 2 == (await stats(redis_url, tmp_path))["total_chunks"]

    archive_path(archive_dir, "run-old").write_text("{not an event\n")
    third = await answer(aredis, running, check("c3", "run-live", OWN))
    assert isinstance(third, ParagraphsChecked), "an ended run's archive is read once"
    assert third.is_unique and third.corpus_chunks == 2
