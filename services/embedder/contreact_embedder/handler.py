"""A batch of embedding tasks in, one answer per task out: every text of the batch
in one model call (whatever runs the tasks came from), the ``ReflectionEmbedded``
or ``EmbeddingFailed`` answers written to the orchestrator's inbox in one round
trip. ``serve_batches`` acks the batch once this returns.

A cycle's memory retrieval (``cognition.memory_block``) is answered
``MemoriesRetrieved``, with the error when it could not be done (the cycle then has no
block).

A task that cannot be embedded (its text breaks the model, or it asks for another
model) is answered ``EmbeddingFailed`` without failing its batch. Anything else
(Redis is down) propagates, and the batch stays pending to be retried.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from contreact_bus.streams.inbox import Inbox
from contreact_embedder.corpus_index import CorpusIndex
from contreact_embedder.embedding_service import Embedding, EmbeddingService
from contreact_embedder.exceptions import EmbeddingError
from contreact_embedder.memory_search import MemorySearch
from contreact_events.core.tools import SEARCH_TOOL
from contreact_events.diversity.corpus import check_answer
from contreact_events.diversity.paragraphs import split_paragraphs
from contreact_events.wire.answers import (
    embedding_failed,
    memories_retrieved,
    reflection_embedded,
    tool_result,
)
from contreact_events.wire.tasks import EmbedTask, InboxMessage

log = logging.getLogger(__name__)


class EmbedHandler:
    """The ``serve_batches`` handler of the embedder."""

    def __init__(
        self,
        service: EmbeddingService,
        redis: aioredis.Redis,
        inbox: Inbox,
        archive_dir: Path,
        *,
        search_cache_runs: int = 64,
        search_cache_vectors: int = 20_000,
    ) -> None:
        """``archive_dir``: the orchestrator's archive of ended runs, read for a run
        whose log has left Redis. ``search_cache_*``: what the memory search keeps
        between searches (``EmbedderSettings``)."""
        self._service = service
        self._redis = redis
        self._inbox = inbox
        self._corpus = CorpusIndex(redis, archive_dir)
        self.search = MemorySearch(
            redis,
            archive_dir,
            service,
            cache_runs=search_cache_runs,
            cache_vectors=search_cache_vectors,
        )

    async def __call__(self, tasks: Sequence[EmbedTask]) -> None:
        answers = await self.answers(tasks)
        async with self._redis.pipeline(transaction=False) as pipe:
            for answer in answers:
                self._inbox.queue(pipe, answer)
            await pipe.execute()

    async def answers(self, tasks: Sequence[EmbedTask]) -> list[InboxMessage]:
        """One inbox message per task, in the tasks' order. Every text of the batch
        (reflections, and the paragraphs of paragraph checks) goes in one model call."""
        ours = [task for task in tasks if self.serves(task.model)]
        texts: list[str] = []
        spans: dict[str, tuple[int, int]] = {}
        for task in ours:
            parts = _texts_of(task)
            spans[task.task_id] = (len(texts), len(texts) + len(parts))
            texts.extend(parts)
        started = time.perf_counter()
        embedded = await self._service.aembed_each(texts)
        if ours:
            log.debug("embedded %d texts in %.3f s", len(texts), time.perf_counter() - started)
        out = []
        for task in tasks:
            span = spans.get(task.task_id)
            if span is not None and task.kind in ("paragraphs", "search", "memories"):
                out.append(await self._isolated(task, embedded[span[0] : span[1]]))
                continue
            result = embedded[span[0]] if span is not None else None
            if result is None:
                error = f"this embedder serves {self._service.model_name}, not {task.model!r}"
                if task.kind == "search":
                    out.append(
                        tool_result(
                            task.run_id, task.task_id, SEARCH_TOOL, f"Error: {error}", ok=False
                        )
                    )
                elif task.kind == "memories":
                    out.append(memories_retrieved(task, (), error=error))
                else:
                    out.append(embedding_failed(task, error))
            elif isinstance(result, Embedding):
                if result.cleaned:
                    log.warning("%s: text had characters that are not UTF-8", task.task_id)
                vector = result.as_floats()
                model = self._service.model_name
                out.append(
                    reflection_embedded(
                        task,
                        vector,
                        model,
                        truncated=result.truncated,
                        runtime=self._service.runtime,
                    )
                )
            else:
                log.warning("%s of run %s: %s", task.task_id, task.run_id, result)
                out.append(embedding_failed(task, str(result)))
        return out

    async def _isolated(
        self, task: EmbedTask, embedded: Sequence[Embedding | EmbeddingError]
    ) -> InboxMessage:
        """A paragraph check or a search, failing alone: one task's bad setting (an
        invalid pattern) or unreadable corpus (a corrupt event in a scope's log)
        answers that task with a failure; its batch mates from other runs go on.
        Redis going away is not the task's fault: it propagates, the batch is retried."""
        try:
            if task.kind == "search":
                return await self._answer_search(task, embedded[0])
            if task.kind == "memories":
                return await self._answer_retrieval(task, embedded[0])
            return await self._check(task, embedded)
        except (RedisConnectionError, RedisTimeoutError):
            raise
        except Exception as exc:
            log.warning("%s of run %s failed alone: %s", task.task_id, task.run_id, exc)
            error = f"{type(exc).__name__}: {exc}"
            if task.kind == "search":
                output = f"Error: the search could not be done ({error})."
                return tool_result(task.run_id, task.task_id, SEARCH_TOOL, output, ok=False)
            if task.kind == "memories":
                return memories_retrieved(task, (), error=f"the retrieval failed: {error}")
            return embedding_failed(task, f"the paragraph check failed: {error}")

    async def _check(
        self, task: EmbedTask, embedded: Sequence[Embedding | EmbeddingError]
    ) -> InboxMessage:
        """Seed 001's check of one answer against its scope's corpus."""
        failed = [e for e in embedded if not isinstance(e, Embedding)]
        if failed:
            return embedding_failed(task, str(failed[0]))
        paragraphs = split_paragraphs(task.text, task.min_length)
        vectors = [e.as_floats() for e in embedded if isinstance(e, Embedding)]
        await self._corpus.refresh(task.scope)
        return check_answer(
            task, paragraphs, vectors, self._corpus.index, runtime=self._service.runtime
        )

    async def _answer_search(
        self, task: EmbedTask, query: Embedding | EmbeddingError
    ) -> InboxMessage:
        if not isinstance(query, Embedding):
            output = f"Error: the query could not be embedded ({query}). Try other words."
            return tool_result(task.run_id, task.task_id, SEARCH_TOOL, output, ok=False)
        output = await self.search.search(
            task.run_id, query.as_floats(), task.text, task.k, task.task_id
        )
        return tool_result(task.run_id, task.task_id, SEARCH_TOOL, output, ok=True)

    async def _answer_retrieval(
        self, task: EmbedTask, query: Embedding | EmbeddingError
    ) -> InboxMessage:
        if not isinstance(query, Embedding):
            return memories_retrieved(task, (), error=f"the query could not be embedded: {query}")
        found = await self.search.retrieve(
            task.run_id, query.as_floats(), task.text, task.k, task.task_id
        )
        return memories_retrieved(task, found)

    def serves(self, model: str) -> bool:
        """``all-MiniLM-L6-v2``, with or without its ``sentence-transformers/`` owner."""
        return model.rsplit("/", 1)[-1] == self._service.model_name


def _texts_of(task: EmbedTask) -> list[str]:
    if task.kind == "paragraphs":
        return split_paragraphs(task.text, task.min_length)
    return [task.text]
