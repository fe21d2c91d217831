"""The assessor's settings (environment variables, prefix ``CONTREACT_ASSESS_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contreact_bus.connection import DEFAULT_REDIS_URL
from contreact_bus.service import instance_name


class AssessorSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CONTREACT_ASSESS_", extra="ignore", populate_by_name=True
    )

    redis_url: str = Field(
        default=DEFAULT_REDIS_URL,
        validation_alias=AliasChoices("CONTREACT_ASSESS_REDIS_URL", "REDIS_URL"),
    )
    """The platform's Redis: run logs, assessment records, the LLM worker's streams."""
    rq_redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("CONTREACT_RQ_REDIS_URL", "CONTREACT_ASSESS_RQ_REDIS_URL"),
    )
    """rq's Redis (its commands span keys, so on a Cluster it must be a plain Redis of
    its own); unset: the platform's."""
    data_dir: Path = Field(
        default=Path("data"),
        validation_alias=AliasChoices("CONTREACT_ASSESS_DATA_DIR", "CONTREACT_DATA_DIR"),
    )
    instance_name: str = Field(default_factory=instance_name)
    reply_timeout_s: float = Field(default=900.0, gt=0)
    """Longest wait for the LLM worker's answer to one evaluator call (a model load
    and a long answer included); past it the attempt fails and rq retries it."""
    heartbeat_s: float = Field(default=2.0, gt=0)

    @property
    def archive_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def rq_url(self) -> str:
        return self.rq_redis_url or self.redis_url
