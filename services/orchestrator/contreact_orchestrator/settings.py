"""The orchestrator's one settings object (environment prefix CONTREACT_ORCH_)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contreact_bus.connection import DEFAULT_REDIS_URL
from contreact_events.names import DEFAULT_INBOX_SHARDS


class OrchestratorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CONTREACT_ORCH_", extra="ignore")

    redis_url: str = Field(
        default=DEFAULT_REDIS_URL,
        validation_alias=AliasChoices("CONTREACT_ORCH_REDIS_URL", "REDIS_URL"),
    )
    data_dir: Path = Field(
        default=Path("data"),
        validation_alias=AliasChoices("CONTREACT_ORCH_DATA_DIR", "CONTREACT_DATA_DIR"),
    )
    consumer_name: str = "orchestrator"
    """Stable on purpose: one orchestrator owns the inbox, and after a restart it takes
    its own unacked entries back at once instead of waiting ``reclaim_idle_ms``."""
    shards: int = Field(default=DEFAULT_INBOX_SHARDS, gt=0, le=1024)
    """Inbox shards of the deployment: set once (the first orchestrator records it)."""
    block_ms: int = 1000
    batch_size: int = 64
    reclaim_idle_ms: int = 30_000
    heartbeat_s: float = 2.0
    log_level: str = "INFO"

    @property
    def archive_dir(self) -> Path:
        return self.data_dir / "runs"
