"""Shared fixtures: a real Redis for the whole session.

Order of preference: ``REDIS_URL`` if set; a Redis container when a Docker engine
answers and can run one (testcontainers); otherwise a ``redis-server`` process started
here on a free port, in a temporary directory, stopped at the end. An engine that
answers but has no Redis image and cannot pull one (a machine that reaches no
registry) is no reason to fail: the session falls back to the process. Which Redis
the session uses, and why, is printed when it starts and again in the summary.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis

from contreact_bus.local_redis import running_redis_server

REDIS_IMAGE = "redis:7-alpine"
_CHOICE_KEY = pytest.StashKey[str]()


def _docker_client() -> tuple[Any, str]:
    """A client of an engine that answers, or None and why not."""
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        return client, ""
    except Exception as exc:
        return None, f"no Docker engine answers ({type(exc).__name__})"


def _explain(exc: Exception) -> str:
    text = str(getattr(exc, "explanation", None) or exc).strip()
    return f"{type(exc).__name__}: {' '.join(text.split())[:200]}"


def _image_problem(client: Any) -> str | None:
    """Why the engine cannot give a Redis container (no image, and none to pull)."""
    import docker

    try:
        client.images.get(REDIS_IMAGE)
        return None
    except docker.errors.ImageNotFound:
        pass
    try:
        client.images.pull(REDIS_IMAGE)
        return None
    except Exception as exc:
        return (
            f"a Docker engine answers but has no {REDIS_IMAGE} image and cannot pull it "
            f"({_explain(exc)})"
        )


def _announce(config: pytest.Config, line: str) -> None:
    config.stash[_CHOICE_KEY] = line
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    if capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\n{line}")
    else:
        reporter.write_line(line)


_LONG_FIRST = ("docker", "e2e", "browser", "slow")
"""Marks of the files that take minutes, longest kind first."""


def _rank(item: pytest.Item) -> int:
    marks = {mark.name for mark in item.iter_markers()}
    return next((i for i, name in enumerate(_LONG_FIRST) if name in marks), len(_LONG_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files that take minutes first, so that `-n N --dist loadfile
    --no-loadscope-reorder` (`make test`) hands them out while the quick ones can still
    fill the gaps (longest first): in xdist's own order (most tests first) the e2e files
    of a few tests each came last, a 150-second call among them, and ran at the end on
    one worker while the other had nothing left. A file keeps its place by its longest
    kind and its tests their order (a stable sort)."""
    rank: dict[str, int] = {}
    for item in items:
        rank[item.nodeid.split("::")[0]] = min(
            rank.get(item.nodeid.split("::")[0], len(_LONG_FIRST)), _rank(item)
        )
    items.sort(key=lambda item: rank[item.nodeid.split("::")[0]])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    line = terminalreporter.config.stash.get(_CHOICE_KEY, None)
    if line:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def redis_server(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[str]:
    """URL of a Redis for this session (database 0 is flushed by ``redis_url``)."""
    if url := os.environ.get("REDIS_URL"):
        _announce(pytestconfig, f"redis: {url} (REDIS_URL is set)")
        yield url
        return
    client, why = _docker_client()
    if client is not None:
        why = _image_problem(client) or ""
    if client is not None and not why:
        # Ryuk (testcontainers' reaper) would be one more image to pull; the fixture
        # stops its container itself.
        os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
        try:
            from testcontainers.community.redis import RedisContainer
        except ImportError:  # testcontainers before 4.13
            from testcontainers.redis import RedisContainer

        container = RedisContainer(REDIS_IMAGE)
        try:
            container.start()
        except Exception as exc:
            why = f"a Docker engine answers but cannot run {REDIS_IMAGE}: {_explain(exc)}"
            with contextlib.suppress(Exception):
                container.stop()
        else:
            try:
                host = container.get_container_host_ip()
                url = f"redis://{host}:{container.get_exposed_port(6379)}/0"
                _announce(pytestconfig, f"redis: {url}, a {REDIS_IMAGE} container")
                yield url
            finally:
                container.stop()
            return
    with running_redis_server(tmp_path_factory.mktemp("redis")) as url:
        _announce(pytestconfig, f"redis: {url}, a redis-server process here: {why}")
        yield url


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """A clean database for one test."""
    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    client.close()
    return redis_server


@pytest.fixture
async def aredis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()
