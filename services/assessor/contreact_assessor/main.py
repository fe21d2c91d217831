"""Entry point: an rq worker on the assessment queue, with the service's heartbeat.

The worker is rq's ``SimpleWorker``: jobs run in this process, one at a time, with
what the first job imported and built still warm (a forked work horse per job spent
most of a short job's time touching the parent's memory again: 1.3 s against 0.1 s
here). rq's started registry gives a job its timeout plus a minute, and a job that
waits for its evaluator call keeps it alive with a heartbeat of its own
(``jobs.BEAT_TTL_S``); a worker killed mid-job leaves it there, and rq's maintenance
(every worker runs it) finds it abandoned once that lapses and retries it. A job past
its timeout is stopped by rq (SIGALRM, in this process's main thread). Run several for
ratings in parallel
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
from rq import SimpleWorker
from rq.serializers import JSONSerializer

from contreact_assessor.settings import AssessorSettings
from contreact_bus.assessments.queueing import queue
from contreact_bus.connection import connect
from contreact_bus.failover.address import RedisAddress, redis_client
from contreact_bus.service import heartbeat, setup_logging
from contreact_events.core.state import AgentState
from contreact_events.instruments import INSTRUMENT_NAMES, load_instrument

log = logging.getLogger(__name__)
SERVICE = "assessor"


def run(settings: AssessorSettings, *, burst: bool = False) -> bool:
    """Work the queue until stopped (SIGTERM/SIGINT: rq's warm shutdown), or with
    ``burst`` until it is empty. True if any job was worked."""
    _preload()
    connection = _wait_for(settings.rq_redis)
    worker = SimpleWorker(
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


def _preload() -> None:
    """Import the job's code and read the instruments before the first job, so that
    no job's time includes them."""
    import contreact_assessor.jobs  # noqa: F401  (warm for the first job)

    for name in INSTRUMENT_NAMES:
        load_instrument(name)
    AgentState.shape()  # (the JSON schema of the state, hashed once per process)


def _wait_for(address: RedisAddress) -> redis.Redis:
    """rq's Redis, once it answers (a service started before Redis waits for it; a
    failover's election, when no sentinel names a primary yet, is waited out too)."""
    connection: redis.Redis = redis_client(address, asyncio=False)
    delay = 0.2
    while True:
        try:
            connection.ping()
            return connection
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            log.warning(
                "rq's Redis (%s) does not answer (%s); trying again", address.describe(), exc
            )
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def _beat(settings: AssessorSettings, stop: threading.Event) -> None:
    """The heartbeat ``assessor:{instance_name}`` on the platform's Redis, beside rq's
    own worker registration (`contreact status` and `up` read this one)."""

    async def beating() -> None:
        client = await connect(settings.redis, wait=True)
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
