"""What the commands that change a run's settings once it has started refuse alike
(``contreact set`` on a live run: ``config.live_settings``; a what-if replay:
``history.what_if_keys``), and how a dotted key finds the reason it is refused. Pure."""

from __future__ import annotations

from collections.abc import Mapping

RECORDED: Mapping[str, str] = {
    "run_id": "the run's identity, not a setting of its behaviour",
    "experiment": "it names the experiment (and its shared corpus): a recorded fact",
    "condition": "it names the run's condition in its experiment: a recorded fact",
    "system_prompt_file": "it only records where the system prompt came from",
}
"""Settings that record a fact about the run rather than steer it, with why."""

WHO_ANSWERS = (
    "model_name",
    "backend",
    "ollama_client_config",
    "openai_client_config",
    "model_options",
    "keep_alive",
    "script",
)
"""The settings that decide who answers, or how (the model, its host, its options): the
answers a run has had are that model's."""


def refused_alike(who_answers: str) -> dict[str, str]:
    """The refusals both commands make: the recorded facts, and each setting of who
    answers with ``who_answers`` (the command's own words for why)."""
    return {**RECORDED, **dict.fromkeys(WHO_ANSWERS, who_answers)}


def reason_for(key: str, refused: Mapping[str, str]) -> str | None:
    """The reason ``refused`` gives ``key`` (a dotted setting path) or the nearest
    section that holds it (``diversity`` for ``diversity.mode``); None if neither."""
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        reason = refused.get(".".join(parts[:end]))
        if reason is not None:
            return reason
    return None
