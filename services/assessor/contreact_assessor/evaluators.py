"""Who rates, and how the call is made: an evaluator (model, backend, hosts, options)
and the rating a job makes (run, instrument, repeat). Both travel as JSON in the rq
job, so a job carries everything its call needs and nothing is looked up later.

An evaluator named by an experiment, or by a run of the same model, takes that run's
configuration as it ran: the backend its model check resolved (never ``auto``), its
hosts, client timeouts, options and (scripted) script, with the paper's temperature
(0.1) for the rating unless told otherwise.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from contreact_events.catalog.chat import ChatMessage
from contreact_events.config import (
    DEFAULT_OLLAMA_HOST,
    EMBEDDED_HOST,
    ResolvedBackend,
    RunConfig,
    ScriptConfig,
)
from contreact_events.core.state import AgentState
from contreact_events.wire.tasks import LLMTask

DEFAULT_TEMPERATURE = 0.1
"""The paper's evaluator temperature."""
MAX_ANSWER_CHARS = 20_000
"""An evaluator's answer past this is cut by the worker (and says so): a rating is a
level and a sentence; the cap bounds what a runaway answer puts in Redis."""


class Evaluator(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    backend: ResolvedBackend
    hosts: tuple[str, ...] = Field(min_length=1)
    api_key_env: str | None = None
    timeout_s: float | None = None
    connect_timeout_s: float = 5.0
    options: dict[str, Any] = Field(default_factory=dict)
    keep_alive: str | None = None
    script: ScriptConfig | None = None

    @property
    def host(self) -> str:
        return self.hosts[0]


class Rating(BaseModel):
    """One job: ``evaluator`` rates ``run_id`` on ``instrument``, repeat ``repeat``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    instrument: str
    repeat: int = Field(ge=1)
    job_id: str
    evaluator: Evaluator
    forced: bool = False
    requested_by: str = "cli"


def evaluator_of_run(state: AgentState, temperature: float = DEFAULT_TEMPERATURE) -> Evaluator:
    """The model of a run as the run called it (resolved backend, hosts, options)."""
    config = state.config
    if config is None or state.backend is None:
        raise ValueError(
            f"run {state.run_id} has no resolved backend (its model check did not pass)"
        )
    return evaluator_from_config(config, state.backend, temperature)


def evaluator_from_config(
    config: RunConfig, backend: ResolvedBackend, temperature: float = DEFAULT_TEMPERATURE
) -> Evaluator:
    client = config.openai_client_config if backend == "openai" else None
    return Evaluator(
        model=config.model_name,
        backend=backend,
        hosts=config.llm_hosts(backend),
        api_key_env=client.api_key_env if client else None,
        timeout_s=client.timeout_s if client else config.ollama_client_config.timeout_s,
        connect_timeout_s=config.ollama_client_config.connect_timeout_s,
        options={**config.model_options.as_options(), "temperature": temperature},
        keep_alive=config.keep_alive,
        script=config.script,
    )


def named_evaluator(
    model: str,
    backend: ResolvedBackend,
    *,
    host: str | None = None,
    temperature: float = DEFAULT_TEMPERATURE,
    api_key_env: str | None = None,
) -> Evaluator:
    """An evaluator given on the command line (no run of it to copy)."""
    if backend == "scripted":
        raise ValueError(
            f"a scripted evaluator ({model}) needs a script: name a run of that model "
            "(its script is used) or an experiment that has it"
        )
    default = EMBEDDED_HOST if backend == "embedded" else DEFAULT_OLLAMA_HOST
    return Evaluator(
        model=model,
        backend=backend,
        hosts=(host or default,),
        api_key_env=api_key_env,
        options={"temperature": temperature},
    )


def evaluator_task(
    rating: Rating,
    messages: tuple[ChatMessage, ...],
    task_id: str,
    deadline: datetime | None,
) -> LLMTask:
    """The chat task of a rating's evaluator call: the history and the instrument's
    prompt, no tools, answered to the job (``reply_to``)."""
    ev = rating.evaluator
    return LLMTask(
        kind="chat",
        task_id=task_id,
        run_id=rating.run_id,
        backend=ev.backend,
        model=ev.model,
        host=ev.host,
        hosts=ev.hosts,
        api_key_env=ev.api_key_env,
        timeout_s=ev.timeout_s,
        connect_timeout_s=ev.connect_timeout_s,
        messages=messages,
        tools=(),
        options=ev.options,
        keep_alive=ev.keep_alive,
        call_index=rating.repeat - 1,
        script=ev.script,
        deadline=deadline,
        max_content_chars=MAX_ANSWER_CHARS,
        reply_to=rating.job_id,
    )
