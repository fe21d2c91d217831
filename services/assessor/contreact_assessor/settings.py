"""The assessor's settings (environment variables, prefix ``CONTREACT_ASSESS_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contreact_bus.connection import DEFAULT_REDIS_URL
from contreact_bus.failover.address import DEFAULT_MASTER_NAME, RedisAddress
from contreact_bus.failover.durability import DEFAULT_WAIT_TIMEOUT_MS, Durability
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
    redis_sentinels: str | None = Field(
        default=None,
        validation_alias=AliasChoices("CONTREACT_ASSESS_REDIS_SENTINELS", "REDIS_SENTINELS"),
    )
    """``host:port,host:port``: reach the primary these sentinels name (the URL then
    gives only the scheme, credentials, TLS options and database)."""
    redis_master_name: str = Field(
        default=DEFAULT_MASTER_NAME,
        validation_alias=AliasChoices("CONTREACT_ASSESS_REDIS_MASTER_NAME", "REDIS_MASTER_NAME"),
    )
    wait_replicas: int = Field(
        default=0,
        ge=0,
        validation_alias=AliasChoices("CONTREACT_ASSESS_WAIT_REPLICAS", "REDIS_WAIT_REPLICAS"),
    )
    """Replicas that must hold a write acknowledging work before it goes on (``WAIT``)."""
    wait_timeout_ms: int = Field(
        default=DEFAULT_WAIT_TIMEOUT_MS,
        gt=0,
        validation_alias=AliasChoices("CONTREACT_ASSESS_WAIT_TIMEOUT_MS", "REDIS_WAIT_TIMEOUT_MS"),
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

    @property
    def redis(self) -> RedisAddress:
        """Where the platform's Redis is: its URL, or the primary its sentinels name."""
        return RedisAddress.of(self.redis_url, self.redis_sentinels, self.redis_master_name)

    @property
    def durability(self) -> Durability:
        return Durability(self.wait_replicas, self.wait_timeout_ms)
