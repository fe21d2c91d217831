"""Entry point: ``contreact-embedder [--burst]`` loads the model, then serves
``tasks:embed`` in micro-batches until SIGTERM; ``--prepare`` only loads it (and
makes the ``onnx`` runtime's export: an image build runs it)."""

from __future__ import annotations

import argparse
import asyncio

from pydantic import ValidationError

from contreact_bus.connection import connect
from contreact_bus.service import run_batch_consumer, setup_logging
from contreact_bus.streams.consumer import Consumer
from contreact_bus.streams.inbox import Inbox, tell_run_of_dead_letter
from contreact_embedder.embedding_service import EmbeddingService
from contreact_embedder.exceptions import ModelUnavailable
from contreact_embedder.handler import EmbedHandler
from contreact_embedder.settings import EmbedderSettings
from contreact_events.names import EMBED_GROUP, EMBED_TASKS_STREAM
from contreact_events.wire.tasks import EmbedTask


async def run(settings: EmbedderSettings, service: EmbeddingService, *, burst: bool = False) -> int:
    """Serve until SIGTERM/SIGINT (or, with ``burst``, until the stream is drained)."""
    redis = await connect(settings.redis, wait=True)
    inbox = await Inbox.open(redis)
    consumer = Consumer(
        redis,
        EMBED_TASKS_STREAM,
        EMBED_GROUP,
        settings.consumer_name,
        settings.consumer_settings(),
        on_dead_letter=tell_run_of_dead_letter(inbox),
    )
    handler = EmbedHandler(
        service,
        redis,
        inbox,
        settings.archive_dir,
        search_cache_runs=settings.search_cache_runs,
        search_cache_vectors=settings.search_cache_vectors,
    )
    try:
        return await run_batch_consumer(
            redis,
            consumer,
            EmbedTask,
            handler,
            service="embedder",
            burst=burst,
            heartbeat_s=settings.heartbeat_s,
        )
    finally:
        await redis.aclose()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="contreact-embedder", description=__doc__)
    parser.add_argument("--burst", action="store_true", help="exit once the stream is drained")
    parser.add_argument(
        "--prepare",
        action="store_true",
        help="load the model (exporting it for the onnx runtime if not yet done), then exit",
    )
    args = parser.parse_args(argv)
    setup_logging()
    try:
        settings = EmbedderSettings()
    except ValidationError as exc:
        raise SystemExit(f"contreact-embedder: bad setting: {exc}") from None
    try:
        service = EmbeddingService(
            settings.model_path,
            batch_size=settings.batch_size,
            runtime=settings.runtime,
            cache_dir=settings.cache_dir,
        )
    except ModelUnavailable as exc:
        raise SystemExit(f"contreact-embedder: {exc}") from None
    if args.prepare:
        print(f"contreact-embedder: {service.model_name} ready (runtime {service.runtime})")
        return
    asyncio.run(run(settings, service, burst=args.burst))
