"""The paper's instrument texts, shipped as data files (see protocol/CITATION.md)."""

from __future__ import annotations

from importlib import resources

CITATION = (
    'S. Szeider, "What Do LLM Agents Do When Left Alone? Evidence of Spontaneous '
    'Meta-Cognitive Patterns", arXiv:2509.21224 (2025)'
)


def _read(name: str) -> str:
    return resources.files("contreact_events").joinpath("protocol", name).read_text("utf-8")


def paper_system_prompt() -> str:
    """Box 1 of the paper, verbatim."""
    return _read("system_prompt.txt")


def pei_scale() -> str:
    """Box 2 of the paper (PEI self-report scale), verbatim."""
    return _read("pei_scale.txt")
