"""The paragraph corpus of seed 001 as a projection of run logs. Pure.

A chunk is a paragraph of an accepted attempt: its text and vector are in the
attempt's ``ParagraphsChecked``, its acceptance is ``ParagraphsAccepted``. Nothing
else stores the corpus: any index of it is rebuilt from the logs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from contreact_events.catalog import Event
from contreact_events.catalog.diversity import (
    TORCH_RUNTIME,
    ChunkMatch,
    ParagraphsAccepted,
    ParagraphsChecked,
)
from contreact_events.config import RunConfig
from contreact_events.diversity.paragraphs import SLIDING_WINDOW_ACTIVATION, check_paragraphs
from contreact_events.diversity.vector_index import VectorIndex
from contreact_events.wire.answers import paragraphs_checked
from contreact_events.wire.tasks import EmbedTask, InboxMessage


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    """``{run_id}/c{cycle}/p{index}``."""
    run_id: str
    cycle: int
    index: int
    text: str
    vector: tuple[float, ...]
    scope: str
    accepted_at: datetime


def scope_for(config: RunConfig, run_id: str) -> str:
    """The corpus a run's paragraphs are checked against and join."""
    if config.diversity.corpus_scope == "experiment" and config.experiment:
        return experiment_scope(config.experiment)
    return run_scope(run_id)


def run_scope(run_id: str) -> str:
    return f"run:{run_id}"


def experiment_scope(experiment: str) -> str:
    return f"experiment:{experiment}"


class CorpusProjection:
    """Reads one run's events in order, in as many pieces as they come, and yields
    the chunks its accepted attempts add."""

    def __init__(self) -> None:
        self._checked: dict[tuple[int, int], ParagraphsChecked] = {}

    def feed(self, events: Iterable[Event]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for event in events:
            if isinstance(event, ParagraphsChecked):
                self._checked[(event.cycle, event.attempt)] = event
            elif isinstance(event, ParagraphsAccepted):
                attempt = self._checked.pop((event.cycle, event.attempt), None)
                if attempt is not None:
                    chunks.extend(_chunks_of(event, attempt))
        return chunks


def accepted_chunks(events: Iterable[Event]) -> list[Chunk]:
    """The chunks a run added to its scope's corpus, in order."""
    return CorpusProjection().feed(events)


def _chunks_of(accepted: ParagraphsAccepted, attempt: ParagraphsChecked) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"{accepted.run_id}/c{accepted.cycle}/p{index}",
            run_id=accepted.run_id,
            cycle=accepted.cycle,
            index=index,
            text=text,
            vector=vector,
            scope=accepted.scope,
            accepted_at=accepted.ts,
        )
        for index, (text, vector) in enumerate(
            zip(attempt.paragraphs, attempt.vectors, strict=True)
        )
    ]


def check_answer(
    task: EmbedTask,
    paragraphs: Sequence[str],
    vectors: Sequence[Sequence[float]],
    index: VectorIndex,
    *,
    runtime: str = TORCH_RUNTIME,
) -> InboxMessage:
    """Seed 001's check of one answer's paragraphs (embedded, in order) against the
    task's scope in ``index``: the embedder's answer, and the test driver's.
    ``runtime``: what ran the model that made ``vectors`` (recorded with them)."""
    result = check_paragraphs(
        paragraphs,
        vectors,
        index,
        scope=task.scope,
        threshold=task.threshold,
        extra_patterns=task.extra_patterns,
        attempts_remaining=task.attempts_remaining,
    )
    matches = [
        ChunkMatch(
            paragraph_index=m.paragraph_index,
            score=m.similarity_score,
            matched_id=m.stored_content_id,
            matched_text=m.matched_paragraph,
        )
        for m in result.paragraph_matches
    ]
    chunks = index.count(task.scope)
    return paragraphs_checked(
        task,
        paragraphs=paragraphs,
        vectors=vectors,
        overall_similarity=result.overall_similarity,
        is_unique=result.is_unique,
        matches=matches,
        feedback=result.feedback,
        corpus_chunks=chunks,
        windows=chunks > SLIDING_WINDOW_ACTIVATION,
        runtime=runtime,
    )
