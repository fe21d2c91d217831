"""Where the platform's Redis is, and the one function that makes its clients.

A ``RedisAddress`` is a URL (``redis://`` or ``rediss://`` for TLS, an ACL user and
password, a database: as ``REDIS_URL`` always was), or, with sentinels named
(``REDIS_SENTINELS=host:port,host:port``), whichever server those sentinels call the
primary of ``REDIS_MASTER_NAME``: the URL then gives the scheme, the credentials (the
sentinels' too), the TLS options and the database, and its host and port are not used.
``redis_client`` makes both kinds of client from one address: the asyncio client of the
services (the caller passes its pool class) and the sync client of rq, the health check
and the CLI's rq calls. Through sentinels they are redis-py's own (``redis.sentinel.Sentinel`` and
``redis.asyncio.sentinel.Sentinel``, ``master_for``): each new connection asks the
sentinels for the primary, and a connection to a primary that was demoted turns its
``READONLY`` answer into a ``ConnectionError``, so the next try finds the new one.

This module imports nothing of asyncio's until an asyncio client is asked for (the
health check, run every few seconds in every container, stays light).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contreact_bus.exceptions import BusError
from contreact_bus.redact import redact_url

DEFAULT_MASTER_NAME = "contreact"
"""The master name the sentinels monitor, unless ``REDIS_MASTER_NAME`` says otherwise."""


class BadRedisAddress(BusError, ValueError):
    """``REDIS_SENTINELS`` (or the master name) cannot be read."""


@dataclass(frozen=True)
class RedisAddress:
    url: str
    sentinels: tuple[tuple[str, int], ...] = ()
    master_name: str = DEFAULT_MASTER_NAME

    @classmethod
    def of(
        cls, url: str, sentinels: str | None = None, master_name: str | None = None
    ) -> RedisAddress:
        """From a service's settings: the URL, ``REDIS_SENTINELS`` as written (None or
        empty: no sentinels), ``REDIS_MASTER_NAME``."""
        name = (master_name or DEFAULT_MASTER_NAME).strip()
        if not name or any(c.isspace() for c in name):
            raise BadRedisAddress(
                f"REDIS_MASTER_NAME {master_name!r} is not a name: set it to the name the "
                "sentinels monitor (`sentinel monitor NAME host port quorum`)"
            )
        return cls(url=url, sentinels=parse_sentinels(sentinels or ""), master_name=name)

    @property
    def through_sentinels(self) -> bool:
        return bool(self.sentinels)

    def describe(self) -> str:
        """For messages and logs: no password, whichever way it is reached."""
        if not self.sentinels:
            return redact_url(self.url)
        listed = ",".join(f"{host}:{port}" for host, port in self.sentinels)
        return f"the primary {self.master_name!r} of the sentinels at {listed}"


def parse_sentinels(text: str) -> tuple[tuple[str, int], ...]:
    """``host:port,host:port`` (spaces allowed; ``[::1]:26379`` for IPv6)."""
    found = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise BadRedisAddress(
                f"REDIS_SENTINELS has {item!r}, which is not host:port: write it as "
                "host:port,host:port (e.g. redis-a:26379,redis-b:26379)"
            )
        found.append((host, int(port)))
    return tuple(found)


def redis_client(
    address: RedisAddress, *, asyncio: bool, pool_class: Any = None, **options: Any
) -> Any:
    """A client of ``address``: ``redis.asyncio.Redis`` with ``asyncio`` (its pool of
    ``pool_class``, a subclass of redis-py's ``ConnectionPool``, or of its
    ``SentinelConnectionPool`` through sentinels), else ``redis.Redis``. ``options`` are
    connection options (socket timeouts, pool size...), for the sentinels too where
    they are ``socket_*`` ones. Nothing is connected yet."""
    import importlib

    package = "redis.asyncio" if asyncio else "redis"
    redis_class: Any = importlib.import_module(package).Redis
    managing: Any = importlib.import_module(f"{package}.sentinel")
    plain_pool: Any = pool_class or importlib.import_module(f"{package}.connection").ConnectionPool
    packing = options.pop("connection_wrapper", None) or (lambda cls: cls)
    if not address.sentinels:
        pool = plain_pool.from_url(address.url, **options)
        pool.connection_class = packing(pool.connection_class)
        return redis_class.from_pool(pool)
    kwargs: dict[str, Any] = dict(
        importlib.import_module(f"{package}.connection").parse_url(address.url)
    )
    for key in ("host", "port", "path"):
        kwargs.pop(key, None)
    tls = "SSL" in getattr(kwargs.pop("connection_class", None), "__name__", "")
    kwargs.update(options)
    kwargs["connection_class"] = packing(
        managing.SentinelManagedSSLConnection if tls else managing.SentinelManagedConnection
    )
    sentinel_kwargs = {k: v for k, v in options.items() if k.startswith("socket_")}
    sentinel_kwargs.update(sentinel_credentials(kwargs))
    if tls:  # sentinels of a TLS deployment speak TLS too, with the same CA
        sentinel_kwargs.update({k: v for k, v in kwargs.items() if k.startswith("ssl")})
        sentinel_kwargs["ssl"] = True
    sentinel = managing.Sentinel(list(address.sentinels), sentinel_kwargs=sentinel_kwargs)
    return sentinel.master_for(
        address.master_name,
        redis_class=redis_class,
        connection_pool_class=pool_class or managing.SentinelConnectionPool,
        **kwargs,
    )


def sentinel_credentials(url_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The URL's ACL user and password, which the sentinels are asked with too: a
    deployment with a password on Redis gives its sentinels the same (``requirepass`` in
    their configuration, or the same ACL user); a URL without one asks them without."""
    return {k: url_kwargs[k] for k in ("username", "password") if url_kwargs.get(k)}


def sentinel_diagnosis(address: RedisAddress, timeout_s: float = 2.0) -> str:
    """One line saying why no primary was found through ``address``'s sentinels: none
    answers, or those that answer know no master of that name (and which they know)."""
    import redis
    from redis.connection import parse_url

    credentials = sentinel_credentials(dict(parse_url(address.url)))  # type: ignore[no-untyped-call]
    known: set[str] = set()
    answering = []
    silent = []
    for host, port in address.sentinels:
        client = redis.Redis(host=host, port=port, socket_timeout=timeout_s,
                             socket_connect_timeout=timeout_s, **credentials)  # fmt: skip
        try:
            masters = client.sentinel_masters()
        except (redis.RedisError, OSError):
            silent.append(f"{host}:{port}")
            continue
        finally:
            client.close()
        answering.append(f"{host}:{port}")
        known.update(str(name) for name in masters)
    if not answering:
        return (
            f"No sentinel answers at {', '.join(silent)}: start redis-sentinel there, "
            "or fix REDIS_SENTINELS"
        )
    if address.master_name not in known:
        names = ", ".join(sorted(known)) or "none"
        return (
            f"The sentinels at {', '.join(answering)} monitor no master named "
            f"{address.master_name!r} (they know: {names}): set REDIS_MASTER_NAME to the "
            "name in their `sentinel monitor` line"
        )
    return (
        f"The sentinels at {', '.join(answering)} have no reachable primary for "
        f"{address.master_name!r} right now (a failover under way?)"
    )
