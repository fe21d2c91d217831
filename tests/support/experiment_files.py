"""An experiment file as the end-to-end tests and the benchmarks write one: models x
replicas on one host, the operator answered by policy, the diversity check off (the
embedder is tested and measured on its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def experiment_file(
    folder: Path,
    name: str,
    models: list[dict[str, Any]],
    *,
    replicas: int,
    cycles: int,
    backend: str,
    host: str,
) -> Path:
    """``{folder}/{name}.yaml``: ``models`` x ``replicas`` runs of ``cycles`` cycles on
    ``host``."""
    data = {
        "experiment": name,
        "replicas": replicas,
        "cycle_count": cycles,
        "backend": backend,
        "ollama_client_config": {"host": host},
        "operator": {"mode": "auto"},
        "diversity": {"enabled": False},
        "models": models,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path
