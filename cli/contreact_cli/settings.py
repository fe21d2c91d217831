"""The CLI's one settings object (environment prefix CONTREACT_)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from contreact_bus.connection import DEFAULT_REDIS_URL
from contreact_bus.failover.address import DEFAULT_MASTER_NAME, RedisAddress
from contreact_bus.failover.settings import SharedVariables


class CLISettings(SharedVariables):
    model_config = SettingsConfigDict(env_prefix="CONTREACT_", extra="ignore")
    # The Redis fields read CONTREACT_REDIS_URL, then REDIS_URL (``SharedVariables``).

    redis_url: str | None = None
    """A Redis to use. Unset: the one `contreact up` started (its URL is in the data dir)."""
    rq_redis_url: str | None = Field(
        default=None, validation_alias=AliasChoices("CONTREACT_RQ_REDIS_URL")
    )
    """rq's Redis, for `contreact assess` (the assessor's setting); unset: the platform's."""
    redis_sentinels: str | None = None
    """``host:port,host:port``: reach the primary these sentinels name (as every service)."""
    redis_master_name: str = DEFAULT_MASTER_NAME
    """The name the sentinels know the primary by."""
    data_dir: Path = Path("data")
    local_redis_port: int = 6390
    """Port of the Redis that `contreact up` starts (not 6379: a system Redis may be there)."""
    heartbeat_fresh_s: float = 6.0
    """A service whose last heartbeat is older is taken as gone (services beat every 2 s)."""
    service_stall_s: float = Field(default=60.0, gt=0)
    """`contreact up`'s supervisor stops and restarts a service whose own heartbeat has
    been silent this long (its loop is stuck: it runs but serves nobody)."""
    progress_every_s: float = Field(default=10.0, gt=0)
    """While a followed run waits on its model without news, a line this often."""
    memory_db_path: Path | None = None
    """The memory service's SQLite file (``CONTREACT_MEMORY_DB_PATH``, the variable the
    memory service reads too); default ``{data_dir}/memory.db``."""

    @property
    def memory_db(self) -> Path:
        return self.memory_db_path or self.data_dir / "memory.db"

    @property
    def archive_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def local_redis_url_file(self) -> Path:
        return self.data_dir / "redis.url"

    def resolved_rq_redis_url(self) -> str:
        return self.rq_redis_url or self.resolved_redis_url()

    def resolved_redis_url(self) -> str:
        if self.redis_url:
            return self.redis_url
        if self.local_redis_url_file.exists():
            return self.local_redis_url_file.read_text().strip()
        return DEFAULT_REDIS_URL

    def redis_address(self) -> RedisAddress:
        """The platform's Redis: ``resolved_redis_url``, or the primary the sentinels name."""
        return RedisAddress.of(
            self.resolved_redis_url(), self.redis_sentinels, self.redis_master_name
        )

    def rq_redis_address(self) -> RedisAddress:
        """rq's: a plain URL of its own if set, else the platform's."""
        return RedisAddress(self.rq_redis_url) if self.rq_redis_url else self.redis_address()
