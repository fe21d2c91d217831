"""The worker's one settings class (environment prefix ``CONTREACT_LLM_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contreact_bus.connection import DEFAULT_REDIS_URL
from contreact_bus.service import instance_name


class LLMWorkerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CONTREACT_LLM_", populate_by_name=True)

    redis_url: str = Field(
        default=DEFAULT_REDIS_URL,
        validation_alias=AliasChoices("redis_url", "CONTREACT_LLM_REDIS_URL", "REDIS_URL"),
    )
    consumer_name: str = Field(default_factory=instance_name)
    concurrency: int = Field(default=8, gt=0)
    """Tasks handled at once by this process (across models)."""
    ollama_per_model: int = Field(default=2, gt=0)
    embedded_per_model: int = Field(default=1, gt=0)
    scripted_per_model: int = Field(default=64, gt=0)
    max_attempts: int = Field(default=3, gt=0)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=10.0, ge=0)
    gguf_path: Path | None = None
    """Use this GGUF file for the embedded backend instead of the bundled Gemma 3 270M."""
    embedded_n_ctx: int = Field(default=4096, gt=0)
    reclaim_idle_ms: int = Field(default=10_000, gt=0)
    block_ms: int = Field(default=1000, gt=0)
    heartbeat_s: float = Field(default=2.0, gt=0)

    def per_model_limit(self, backend: str) -> int:
        limits = {
            "ollama": self.ollama_per_model,
            "embedded": self.embedded_per_model,
            "scripted": self.scripted_per_model,
        }
        return limits.get(backend, 1)
