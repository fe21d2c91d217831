"""The platform's Redis as settings: the fields every service's settings object has, in
one place (``RedisSettings``; ``DurableRedisSettings`` for the services whose writes
acknowledge work), each read from the service's own variable first
(``CONTREACT_ORCH_REDIS_URL``: its ``env_prefix`` and the field's name), then from the
variable the whole deployment shares (``REDIS_URL``)."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings

from contreact_bus.connection import DEFAULT_REDIS_URL
from contreact_bus.failover.address import DEFAULT_MASTER_NAME, RedisAddress
from contreact_bus.failover.durability import DEFAULT_WAIT_TIMEOUT_MS, Durability

SHARED_VARIABLES = {
    "redis_url": "REDIS_URL",
    "redis_sentinels": "REDIS_SENTINELS",
    "redis_master_name": "REDIS_MASTER_NAME",
    "wait_replicas": "REDIS_WAIT_REPLICAS",
    "wait_timeout_ms": "REDIS_WAIT_TIMEOUT_MS",
}
"""Each field of the platform's Redis, and the variable every service reads it from when
its own (prefixed) variable is unset."""


class SharedVariables(BaseSettings):
    """A settings object whose fields named in ``SHARED_VARIABLES`` read the service's own
    variable, then the shared one (the CLI's, whose ``redis_url`` may be unset)."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        prefix = str(cls.model_config.get("env_prefix") or "")
        for name, shared in SHARED_VARIABLES.items():
            if name not in cls.__pydantic_fields__:
                continue
            own = f"{prefix}{name}".upper()
            field = copy.copy(cls.__pydantic_fields__[name])
            field.validation_alias = AliasChoices(*dict.fromkeys((own, shared)))
            cls.__pydantic_fields__[name] = field
        cls.model_rebuild(force=True)


class RedisSettings(SharedVariables):
    """Where a service finds the platform's Redis."""

    redis_url: str = DEFAULT_REDIS_URL
    """The platform's Redis: the run logs, the task streams, the assessment records."""
    redis_sentinels: str | None = None
    """``host:port,host:port``: reach the primary these sentinels name (the URL then
    gives only the scheme, credentials, TLS options and database)."""
    redis_master_name: str = DEFAULT_MASTER_NAME
    """The name the sentinels know the primary by."""

    @property
    def redis(self) -> RedisAddress:
        """Where the platform's Redis is: its URL, or the primary its sentinels name."""
        return RedisAddress.of(self.redis_url, self.redis_sentinels, self.redis_master_name)


class DurableRedisSettings(RedisSettings):
    """A service's Redis, and how far a write that acknowledges work must have gone."""

    wait_replicas: int = Field(default=0, ge=0)
    """Replicas that must hold a write acknowledging work before it goes on (``WAIT``)."""
    wait_timeout_ms: int = Field(default=DEFAULT_WAIT_TIMEOUT_MS, gt=0)
    """Longest a ``WAIT`` may take; fewer replicas by then: the write counts as unsure."""

    @property
    def durability(self) -> Durability:
        return Durability(self.wait_replicas, self.wait_timeout_ms)
