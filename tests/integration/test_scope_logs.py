"""``contreact_bus.scope_logs`` on a real Redis: the one reader of a corpus scope's runs
(the embedder's corpora, `contreact corpus stats`). Runs in Redis, runs whose logs
expired (archive only), runs requested and not started yet, more than a page of news,
and an unreadable run that must not make the reader skip another run's news."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import write_archive
from contreact_bus.exceptions import RunNotFound
from contreact_bus.run_log import PAGE, RunLog
from contreact_bus.runs import register_run
from contreact_bus.scope_logs import RunCursor, read_since, scope_events
from contreact_cli.corpus_queries import corpus_stats
from contreact_cli.settings import CLISettings
from contreact_events.catalog import Event
from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.exceptions import ContReActEventError
from contreact_events.names import run_log_key

pytestmark = [pytest.mark.redis]

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def events(run_id: str, count: int, first: int = 0) -> list[Event]:
    return [
        ToolCallCompleted(
            event_id=f"{run_id}-{n}",
            run_id=run_id,
            ts=T0 + timedelta(seconds=n),
            correlation_id=run_id,
            task_id=f"t{n}",
            tool_name="list",
            output=str(n),
        )
        for n in range(first, first + count)
    ]


def ids(read: list[Event]) -> list[str]:
    return [event.event_id for event in read]


async def test_an_experiment_run_requested_but_not_started_has_no_events_yet(
    aredis: aioredis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """`corpus stats --experiment` refused the whole experiment (RunNotFound) while one
    replica was requested and not started; the embedder counted it empty."""
    await register_run(aredis, "started", "exp")
    await RunLog(aredis).append("started", events("started", 2))
    await register_run(aredis, "waiting", "exp")
    assert {
        run: ids(e) for run, e in (await scope_events(aredis, tmp_path, "experiment:exp")).items()
    } == {
        "started": ["started-0", "started-1"],
        "waiting": [],
    }
    stats = await corpus_stats(CLISettings(redis_url=redis_url, data_dir=tmp_path), None, "exp")
    assert stats["total_chunks"] == 0 and stats["scope"] == "experiment:exp"


async def test_a_run_scope_reads_the_archive_without_redis_and_names_a_missing_run(
    tmp_path: Path,
) -> None:
    write_archive(tmp_path, "gone", events("gone", 3))
    assert ids((await scope_events(None, tmp_path, "run:gone"))["gone"]) == [
        "gone-0",
        "gone-1",
        "gone-2",
    ]
    with pytest.raises(RunNotFound, match="no run 'never' in Redis or in"):
        await scope_events(None, tmp_path, "run:never")


async def test_more_than_a_page_of_news_is_read_whole_then_the_archive_takes_over(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    log = RunLog(aredis)
    await log.append("long", events("long", PAGE + 5))
    cursor = RunCursor("long")
    (read,) = await read_since(aredis, tmp_path, [cursor])
    assert len(read) == PAGE + 5 and cursor.position == PAGE + 5 and not cursor.done

    await log.append("long", events("long", 2, first=PAGE + 5))
    write_archive(tmp_path, "long", await log.events("long"))
    await aredis.delete(run_log_key("long"))
    (read,) = await read_since(aredis, tmp_path, [cursor])
    assert ids(read) == [f"long-{PAGE + 5}", f"long-{PAGE + 6}"]
    assert cursor.done
    (read,) = await read_since(aredis, tmp_path, [cursor])
    assert read == []


async def test_an_unreadable_run_leaves_every_cursor_where_it_was(
    aredis: aioredis.Redis, tmp_path: Path
) -> None:
    await RunLog(aredis).append("fine", events("fine", 2))
    await aredis.xadd(run_log_key("broken"), {"type": "RunRequested", "event": b"{not json"})
    cursors = [RunCursor("fine"), RunCursor("broken")]
    with pytest.raises(ContReActEventError):
        await read_since(aredis, tmp_path, cursors)
    assert cursors[0].position == 0, "the fine run's news would be lost"

    await aredis.delete(run_log_key("broken"))
    fine, broken = await read_since(aredis, tmp_path, cursors)
    assert ids(fine) == ["fine-0", "fine-1"] and broken == []
