"""The dashboard's settings (environment variables, prefix ``CONTREACT_UI_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from contreact_bus.failover.settings import RedisSettings
from contreact_bus.service import instance_name


class UISettings(RedisSettings):
    model_config = SettingsConfigDict(
        env_prefix="CONTREACT_UI_", extra="ignore", populate_by_name=True
    )

    data_dir: Path = Field(
        default=Path("data"),
        validation_alias=AliasChoices("CONTREACT_UI_DATA_DIR", "CONTREACT_DATA_DIR"),
    )
    db_path: Path | None = None
    """The projection store (SQLite); default ``{data_dir}/ui.db``."""
    host: str = "127.0.0.1"
    """Address to bind. Loopback by default: set 0.0.0.0 only behind a trusted network
    (the compose file does, inside its own network)."""
    port: int = Field(default=8765, ge=0, le=65535)
    poll_s: float = Field(default=0.25, gt=0)
    """How often the follower reads what the active runs appended."""
    discover_s: float = Field(default=1.0, gt=0)
    """How often it looks for new runs in ``runs:index`` and the archive folder."""
    heartbeat_s: float = Field(default=2.0, gt=0)
    instance_name: str = Field(default_factory=instance_name)
    keepalive_s: float = Field(default=15.0, gt=0)
    """Server-sent event streams send a comment this often when nothing changes."""
    project: bool = True
    """Run the follower in this process (off: serve what the store holds)."""
    warm_search_model: bool = True
    """Load semantic search's embedding model in the background at start, so the first
    search does not wait seconds for it (off: it loads on the first semantic search)."""

    @property
    def database(self) -> Path:
        return self.db_path if self.db_path is not None else self.data_dir / "ui.db"

    @property
    def archive_dir(self) -> Path:
        return self.data_dir / "runs"
