"""The memory service's settings (environment variables, prefix ``CONTREACT_MEMORY_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contreact_bus.connection import DEFAULT_REDIS_URL
from contreact_bus.failover.address import DEFAULT_MASTER_NAME, RedisAddress
from contreact_bus.service import instance_name
from contreact_bus.streams.consumer import ConsumerSettings


class MemorySettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CONTREACT_MEMORY_", extra="ignore", populate_by_name=True
    )

    redis_url: str = Field(
        default=DEFAULT_REDIS_URL,
        validation_alias=AliasChoices("CONTREACT_MEMORY_REDIS_URL", "REDIS_URL"),
    )
    redis_sentinels: str | None = Field(
        default=None,
        validation_alias=AliasChoices("CONTREACT_MEMORY_REDIS_SENTINELS", "REDIS_SENTINELS"),
    )
    """``host:port,host:port``: reach the primary these sentinels name (the URL then
    gives only the scheme, credentials, TLS options and database)."""
    redis_master_name: str = Field(
        default=DEFAULT_MASTER_NAME,
        validation_alias=AliasChoices("CONTREACT_MEMORY_REDIS_MASTER_NAME", "REDIS_MASTER_NAME"),
    )
    data_dir: Path = Field(
        default=Path("data"),
        validation_alias=AliasChoices("CONTREACT_MEMORY_DATA_DIR", "CONTREACT_DATA_DIR"),
    )
    db_path: Path | None = None
    """The SQLite file; default ``{data_dir}/memory.db``."""
    consumer_name: str = Field(default_factory=instance_name)
    block_ms: int = Field(default=1000, ge=1)
    reclaim_idle_ms: int = Field(default=10_000, ge=1)
    heartbeat_s: float = Field(default=2.0, gt=0)

    @property
    def database(self) -> Path:
        return self.db_path if self.db_path is not None else self.data_dir / "memory.db"

    def consumer_settings(self) -> ConsumerSettings:
        return ConsumerSettings(block_ms=self.block_ms, reclaim_idle_ms=self.reclaim_idle_ms)

    @property
    def redis(self) -> RedisAddress:
        """Where the platform's Redis is: its URL, or the primary its sentinels name."""
        return RedisAddress.of(self.redis_url, self.redis_sentinels, self.redis_master_name)
