"""Benchmarks of the services: the embedder, similarity search, orchestrator scale-out and
recovery, Redis memory, experiments and model swaps, the cognition calls, the compose stack."""
