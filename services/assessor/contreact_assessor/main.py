"""Entry point: an rq worker on the assessment queue, with the service's heartbeat.

The worker is rq's ``Worker``: each job runs in a forked work horse that the worker
watches, so a job's execution keeps beating in rq's started registry while it waits
for the LLM worker (a killed worker's job is found abandoned within a minute and a
half, and retried), and a job past its timeout is killed. Run several for ratings in parallel
(`contreact up --assessors N`, `docker compose up --scale assessor=N`). rq's Redis is
``CONTREACT_RQ_REDIS_URL`` (default: the platform's ``REDIS_URL``); the heartbeat
goes to the platform's, like every service's.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import threading
import time

import redis
from rq import Worker
from rq.serializers import JSONSerializer

from contreact_assessor.queueing import queue
from contreact_assessor.settings import AssessorSettings
from contreact_bus.connection import connect
from contreact_bus.redact import redact_url
from contreact_bus.service import heartbeat, setup_logging

log = logging.getLogger(__name__)
SERVICE = "assessor"


def run(settings: AssessorSettings, *, burst: bool = False) -> bool:
    """Work the queue until stopped (SIGTERM/SIGINT: rq's warm shutdown), or with
    ``burst`` until it is empty. True if any job was worked."""
    connection = _wait_for(settings.rq_url)
    worker = Worker(
        [queue(connection)],
        connection=connection,
        name=f"{SERVICE}-{settings.instance_name}",
        serializer=JSONSerializer,
    )
    stop = threading.Event()
    beating = threading.Thread(target=_beat, args=(settings, stop), daemon=True)
    beating.start()
    try:
        return bool(worker.work(burst=burst, with_scheduler=True, logging_level="INFO"))
    finally:
        stop.set()
        beating.join(timeout=5)
        connection.close()


def _wait_for(url: str) -> redis.Redis:
    """rq's Redis, once it answers (a service started before Redis waits for it)."""
    connection = redis.Redis.from_url(url)
    delay = 0.2
    while True:
        try:
            connection.ping()
            return connection
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            log.warning("rq's Redis at %s does not answer (%s); trying again", redact_url(url), exc)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def _beat(settings: AssessorSettings, stop: threading.Event) -> None:
    """The heartbeat ``assessor:{instance_name}`` on the platform's Redis, beside rq's
    own worker registration (`contreact status` and `up` read this one)."""

    async def beating() -> None:
        client = await connect(settings.redis_url, wait=True)
        done = asyncio.Event()
        task = asyncio.create_task(
            heartbeat(client, f"{SERVICE}:{settings.instance_name}", settings.heartbeat_s, done)
        )
        await asyncio.to_thread(stop.wait)
        done.set()
        await task
        await client.aclose()

    asyncio.run(beating())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="contreact-assessor")
    parser.add_argument("--burst", action="store_true", help="work the queue, then exit")
    args = parser.parse_args(argv)
    setup_logging()
    run(AssessorSettings(), burst=args.burst)
