"""The assessor's settings (environment variables, prefix ``CONTREACT_ASSESS_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from contreact_bus.failover.address import RedisAddress
from contreact_bus.failover.settings import DurableRedisSettings
from contreact_bus.service import instance_name


class AssessorSettings(DurableRedisSettings):
    model_config = SettingsConfigDict(
        env_prefix="CONTREACT_ASSESS_", extra="ignore", populate_by_name=True
    )

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
    """Longest time one evaluator call may take once a worker has taken it (a model
    load and a long answer included); past it the attempt fails and rq retries it."""
    queue_wait_s: float = Field(default=3 * 3600.0, gt=0)
    """Longest wait for a worker to take an evaluator call: calls wait in a background
    line behind live runs, and waiting is not failing. The rating call and its
    follow-up may each wait this long: with ``reply_timeout_s`` both fit in rq's job
    timeout (``JobPolicy.job_timeout_s``, 8 h)."""
    check_timeout_s: float = Field(default=60.0, gt=0)
    """Longest wait for the evaluator model's check (checks are not queued behind runs:
    no answer means no LLM worker, and the attempt fails at once)."""
    heartbeat_s: float = Field(default=2.0, gt=0)

    @property
    def archive_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def rq_redis(self) -> RedisAddress:
        """rq's Redis: a plain URL of its own if set, else the platform's (sentinels too)."""
        return RedisAddress(self.rq_redis_url) if self.rq_redis_url else self.redis
