"""docker-stack.sentinel.yml's Redis from the swarm test: its servers and sentinels, and
a client on the host that follows the primary through the servers' published ports
(the sentinels announce the servers' names on the stack's network, which the host
cannot resolve, so redis-py's own Sentinel client cannot be used from there)."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

REDIS_SERVERS = {"redis": "CONTREACT_REDIS_PORT", "redis-2": "CONTREACT_REDIS_2_PORT",
                 "redis-3": "CONTREACT_REDIS_3_PORT"}  # fmt: skip
"""The Redis servers, and the variable of each one's published port."""
SENTINELS = ("sentinel-1", "sentinel-2", "sentinel-3")
SENTINEL_LABELS = ("contreact.redis-2", "contreact.redis-3")
"""The node labels the file adds to docker-stack.yml's."""
MASTER_NAME = "contreact"


def following_client(ports: Sequence[int], password: str) -> redis.Redis:
    """A client whose every new connection goes to the server (of those published on
    ``ports`` of this host) answering ROLE master; a command that finds none, or loses
    its connection, is tried again for about a minute: a failover is waited out."""
    pool = redis.ConnectionPool(
        connection_class=_PrimaryConnection, ports=tuple(ports), password=password,
        socket_timeout=10, retry=Retry(ExponentialBackoff(cap=1.0, base=0.1), 60),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
    )  # fmt: skip
    return redis.Redis(connection_pool=pool)


class _PrimaryConnection(redis.Connection):
    """A connection to whichever of the published Redis servers answers ROLE master."""

    def __init__(self, *, ports: tuple[int, ...] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]
        self.ports = ports

    def _connect(self) -> socket.socket:
        self.port = self._primary_port()
        sock: socket.socket = super()._connect()  # type: ignore[no-untyped-call]
        return sock

    def _primary_port(self) -> int:
        for port in self.ports:
            client = redis.Redis(port=port, password=self.password, socket_timeout=2,
                                 socket_connect_timeout=2)  # fmt: skip
            try:
                if client.role()[0] in (b"master", "master"):
                    return port
            except (redis.RedisError, OSError):
                continue
            finally:
                client.close()
        raise redis.ConnectionError(f"no Redis server answers as the primary on {self.ports}")
