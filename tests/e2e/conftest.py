"""The whole stack as users run it: `contreact up` starts every service as its own
process against the session's Redis; commands run as subprocesses of the real CLI
(``tests/support/stack.py``)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.support.stack import Stack, own_database, running_stack
from tests.support.stack_env import DEFAULT_PORTS


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


@pytest.fixture(scope="session")
def _held_ports() -> Iterator[dict[int, socket.socket]]:
    """This worker's sockets on the default ports (those it could bind)."""
    held: dict[int, socket.socket] = {}
    try:
        yield held
    finally:
        for sock in held.values():
            sock.close()


@pytest.fixture(autouse=True)
def default_ports_taken(_held_ports: dict[int, socket.socket]) -> tuple[int, ...]:
    """Every e2e test runs with the default ports (dashboard 8765, local Redis 6390)
    taken, as they are after `make demo`: a stack that would take one fails its test
    here, not only on the machine of a user whose demo still runs. Checked before each
    test: the xdist worker that held a port may have finished and let it go."""
    for port in DEFAULT_PORTS:
        if port in _held_ports:
            continue
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:  # taken by another worker, or the user's demo: taken either way
            sock.close()
            continue
        _held_ports[port] = sock
    return DEFAULT_PORTS
