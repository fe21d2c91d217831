"""The memory service's settings (environment variables, prefix ``CONTREACT_MEMORY_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from contreact_bus.failover.settings import RedisSettings
from contreact_bus.service import instance_name
from contreact_bus.streams.consumer import ConsumerSettings


class MemorySettings(RedisSettings):
    model_config = SettingsConfigDict(
        env_prefix="CONTREACT_MEMORY_", extra="ignore", populate_by_name=True
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
