"""The orchestrator's one settings object (environment prefix CONTREACT_ORCH_)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from contreact_bus.failover.settings import DurableRedisSettings
from contreact_bus.streams.consumer import ConsumerSettings
from contreact_events.names import DEFAULT_INBOX_SHARDS
from contreact_orchestrator.replica import ReplicaSettings


class OrchestratorSettings(DurableRedisSettings):
    model_config = SettingsConfigDict(
        env_prefix="CONTREACT_ORCH_", extra="ignore", populate_by_name=True
    )

    data_dir: Path = Field(
        default=Path("data"),
        validation_alias=AliasChoices("CONTREACT_ORCH_DATA_DIR", "CONTREACT_DATA_DIR"),
    )
    shards: int = Field(default=DEFAULT_INBOX_SHARDS, gt=0, le=1024)
    """Inbox shards of the deployment: fixed once (the first orchestrator records it)."""
    replica_name: str | None = None
    """Default: host and process id (so a supervisor can release a dead child's leases)."""
    lease_ttl_s: float = Field(default=10.0, gt=0)
    """A dead replica's shards move to another within this time."""
    renew_every_s: float = Field(default=2.0, gt=0)
    log_retention_s: float = Field(default=3600.0, ge=0)
    """How long a finished (archived) run's log stays in Redis; reads use the archive after."""
    block_ms: int = 1000
    batch_size: int = 64
    reclaim_idle_ms: int = 5_000
    heartbeat_s: float = 2.0
    log_level: str = "INFO"
    otlp_endpoint: str | None = Field(
        default=None, validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_ENDPOINT")
    )
    """Where the run logs go as OpenTelemetry traces (OTLP/HTTP; the ``otel`` extra
    of contreact-bus). Unset: nothing of OpenTelemetry is imported."""
    capture_content: bool = Field(
        default=False,
        validation_alias=AliasChoices("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
    )
    """Message text, tool arguments and results in the spans (off: figures only)."""

    @property
    def archive_dir(self) -> Path:
        return self.data_dir / "runs"

    def replica(self) -> ReplicaSettings:
        return ReplicaSettings(
            lease_ttl_s=self.lease_ttl_s,
            renew_every_s=min(self.renew_every_s, self.lease_ttl_s / 3),
            orphan_after_s=2 * self.renew_every_s,
            consumer=ConsumerSettings(
                block_ms=self.block_ms,
                batch_size=self.batch_size,
                reclaim_idle_ms=self.reclaim_idle_ms,
                reclaim_every_s=1.0,
            ),
        )
