"""The whole stack as users run it: `contreact up` starts every service as its own
process against the session's Redis; commands run as subprocesses of the real CLI
(``tests/support/stack.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.stack import Stack, own_database, running_stack


@pytest.fixture(scope="module")
def stack_env() -> dict[str, str]:
    """Extra environment of the module's services (a test module overrides this)."""
    return {}


@pytest.fixture(scope="module")
def stack(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory, stack_env: dict[str, str]
) -> Iterator[Stack]:
    """One `contreact up` for a test module (its tests use their own run ids): starting
    every service, the embedder's model included, is most of an e2e test's time."""
    workdir = tmp_path_factory.mktemp("stack")
    with running_stack(workdir, own_database(redis_server), env=stack_env) as running:
        yield running
