"""The worker's one settings class (environment prefix ``CONTREACT_LLM_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import SettingsConfigDict

from contreact_bus.failover.settings import RedisSettings
from contreact_bus.service import instance_name
from contreact_llm.backends.check_slots import CheckTimes
from contreact_llm.scheduling.host_slots import HostLimits, SlotTimes
from contreact_llm.scheduling.placement import Policy


class HostSettings(BaseModel):
    """What one host allows: set them as the server is set (``OLLAMA_NUM_PARALLEL``,
    ``OLLAMA_MAX_LOADED_MODELS``). Every worker must be given the same table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    parallel: int = Field(gt=0)
    max_loaded_models: int = Field(default=0, ge=0)
    """0: no limit (a hosted API)."""


class LLMWorkerSettings(RedisSettings):
    model_config = SettingsConfigDict(env_prefix="CONTREACT_LLM_", populate_by_name=True)

    consumer_name: str = Field(default_factory=instance_name)
    concurrency: int = Field(default=32, gt=0)
    """Chat calls this process runs at once (across models and hosts); the host
    limits below are what bounds a host."""
    check_concurrency: int = Field(default=64, gt=0)
    """Model checks this process holds at once, across hosts (a bound on memory: each
    host answers ``check_host_parallel`` of them at once, each at most ``check_timeout_s``)."""
    check_host_parallel: int = Field(default=4, gt=0)
    """Checks of one host at once: a host that never answers queues only its own."""
    check_timeout_s: float = Field(default=10.0, gt=0)
    """Longest a model check waits for its host (a small request; its queue included).
    Shorter before the task's deadline (``deadlines.check_s``)."""
    check_connect_timeout_s: float = Field(default=5.0, gt=0)
    """Longest a check waits to reach its host (the run's connect timeout, if shorter)."""
    hosts: dict[str, HostSettings] = Field(default_factory=dict)
    """Per host (URL as in the run configs; ``embedded`` for the bundled model), as JSON:
    ``{"http://gpu1:11434": {"parallel": 4, "max_loaded_models": 2}}``. Hosts not
    listed get their backend's defaults below."""
    ollama_parallel: int = Field(default=1, gt=0)
    """Ollama's own default for OLLAMA_NUM_PARALLEL."""
    ollama_max_loaded_models: int = Field(default=3, ge=0)
    """Ollama's own default for OLLAMA_MAX_LOADED_MODELS on a CPU (3 per GPU)."""
    openai_parallel: int = Field(default=8, gt=0)
    scripted_parallel: int = Field(default=64, gt=0)
    embedded_parallel: int = Field(default=1, gt=0)
    """Calls of the embedded model at once in this process (it generates one at a time)."""
    policy: Policy = "model_aware"
    """``fifo``: the naive order (oldest waiting first, the host loads what it is asked)."""
    lease_ttl_s: float = Field(default=30.0, gt=0)
    """A slot whose worker stopped renewing it comes back after this long."""
    keep_warm_s: float = Field(default=0.0, ge=0)
    """A margin: a model used this recently is not swapped out for another (a model
    whose runs are still going never is, whatever this says)."""
    max_wait_s: float = Field(default=300.0, gt=0)
    """A route waiting this long without a call started makes the host drain a model."""
    drain_s: float = Field(default=60.0, gt=0)
    host_down_s: float = Field(default=30.0, gt=0)
    """A host of a pool that a call could not reach (refused, reset, no connection within
    ``connect_timeout_s``, no answer within ``timeout_s``) takes no calls for this long;
    then the next call placed there tries it again (docs/how-to/gpu-pool.md)."""
    pool_stick_wait_s: float = Field(default=20.0, ge=0)
    """Longest a call of a pool waits for a slot on its run's host (while that host is
    up and busy); then any up host of the pool with a free slot serves it, and the run
    keeps its host for its next calls."""
    poll_s: float = Field(default=1.0, gt=0)
    """Look at the routes at least this often (wake-ups come through pub/sub)."""
    max_attempts: int = Field(default=3, gt=0)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=10.0, ge=0)
    gguf_path: Path | None = None
    """Use this GGUF file for the embedded backend instead of the bundled Gemma 3 270M."""
    embedded_n_ctx: int = Field(default=4096, gt=0)
    reclaim_idle_ms: int = Field(default=10_000, gt=0)
    block_ms: int = Field(default=1000, gt=0)
    heartbeat_s: float = Field(default=2.0, gt=0)

    def host_limits(self, host: str, backend: str) -> HostLimits:
        """The limits of ``host`` when ``backend`` calls it."""
        if host in self.hosts:
            entry = self.hosts[host]
            return HostLimits(entry.parallel, entry.max_loaded_models)
        match backend:
            case "ollama":
                return HostLimits(self.ollama_parallel, self.ollama_max_loaded_models)
            case "openai":
                return HostLimits(self.openai_parallel, 0)
            case "embedded":
                return HostLimits(self.embedded_parallel, 0)
        return HostLimits(self.scripted_parallel, 0)

    @property
    def slot_times(self) -> SlotTimes:
        return SlotTimes(
            lease_ttl_ms=int(self.lease_ttl_s * 1000),
            keep_warm_ms=int(self.keep_warm_s * 1000),
            drain_ms=int(self.drain_s * 1000),
        )

    @property
    def check_times(self) -> CheckTimes:
        return CheckTimes(
            timeout_s=self.check_timeout_s,
            connect_timeout_s=self.check_connect_timeout_s,
            parallel=self.check_host_parallel,
        )
