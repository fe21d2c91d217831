"""The ids of a run's tasks, named after where the run is (``RUN/cYCLE/sSTEP/tINDEX``...):
a task's id says which run, cycle and step it belongs to, and the same state always names
the same task (a redelivered or re-sent task keeps its id). Pure."""

from __future__ import annotations


def check_task_id(run_id: str) -> str:
    return f"{run_id}/check"


def fork_task_id(run_id: str, at_cycle: int, what: str) -> str:
    """A fork's own tasks (``seed``, ``check``): named by the cycle it forks at, so a
    fork of a fork never reuses its parent's copied ids."""
    return f"{run_id}/fork/c{at_cycle}/{what}"


def llm_task_id(run_id: str, cycle: int, step: int) -> str:
    return f"{run_id}/c{cycle}/s{step}"


def tool_task_id(run_id: str, cycle: int, step: int, index: int) -> str:
    return f"{llm_task_id(run_id, cycle, step)}/t{index}"


def embed_task_id(run_id: str, cycle: int) -> str:
    return f"{run_id}/c{cycle}/embed"


def analysis_task_id(exchange_task_id: str) -> str:
    return f"{exchange_task_id}/analysis"


def persist_task_id(exchange_task_id: str) -> str:
    return f"{exchange_task_id}/persist"


def retrieval_task_id(run_id: str, cycle: int) -> str:
    return f"{run_id}/c{cycle}/memories"


def paragraph_task_id(run_id: str, cycle: int, attempt: int) -> str:
    return f"{run_id}/c{cycle}/paragraphs/a{attempt}"


def compaction_task_id(run_id: str, cycle: int) -> str:
    """The history compaction asked for before cycle ``cycle`` (``history: compact``)."""
    return f"{run_id}/c{cycle}/compact"
