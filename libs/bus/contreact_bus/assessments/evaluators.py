"""Who rates, and what one rating is: an evaluator (model, backend, hosts, its own
settings) and the rating a job makes (run, instrument, repeat). Both travel as JSON in
the rq job, so a job carries everything its call needs and nothing is looked up later.

An evaluator named by an experiment, or by a run of the same model, is reached as that
run reached its model: the backend its model check resolved (never ``auto``), its
hosts, client timeouts and (scripted) script. Its generation settings are its own,
never the rated run's ``model_options``: the instrument's temperature (the paper's
0.1) unless told otherwise, no output cap (a walk up the scale is never cut before its
level), and a seed only when one is asked for, then a different one for each repeat
(``seed + repeat - 1``), so repeats are samples, not copies. The context window the
model ran with (``num_ctx``, a load setting: the history must fit) is kept.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from contreact_events.config import (
    DEFAULT_OLLAMA_HOST,
    EMBEDDED_HOST,
    ResolvedBackend,
    RunConfig,
    ScriptConfig,
)
from contreact_events.config.hosts import (
    CREDENTIALS_FIX,
    has_credentials,
    host_problem,
    model_problem,
)
from contreact_events.config.spend import ModelPrice
from contreact_events.core.state import AgentState

DEFAULT_TEMPERATURE = 0.1
"""The paper's evaluator temperature (each instrument names its own: ``pei.yaml``)."""
KEPT_OPTIONS = ("num_ctx",)
"""What an evaluator keeps of its model's run options: how the model is loaded."""


class BadEvaluator(ValueError):
    """An evaluator that cannot be asked (a bad host or model name): one line, the fix."""


class Evaluator(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    backend: ResolvedBackend
    hosts: tuple[str, ...] = Field(min_length=1)
    api_key_env: str | None = None
    timeout_s: float | None = None
    connect_timeout_s: float = 5.0
    options: dict[str, Any] = Field(default_factory=dict)
    """What every call of this evaluator sends (temperature, num_ctx): never a seed
    (``seed``) and never an output cap."""
    seed: int | None = None
    """Asked for: repeat r of a rating is called with seed ``seed + r - 1``."""
    keep_alive: str | None = None
    script: ScriptConfig | None = None
    price: ModelPrice | None = None
    """The model's price from the run's price table: the LLM worker prices each call of
    the evaluator with it when the provider gives no figure (as for the run's calls)."""

    @property
    def host(self) -> str:
        return self.hosts[0]

    def options_for(self, repeat: int) -> dict[str, Any]:
        """The options of repeat ``repeat``'s call (its own seed, when one is asked)."""
        if self.seed is None:
            return dict(self.options)
        return {**self.options, "seed": self.seed + repeat - 1}


class Rating(BaseModel):
    """One job: ``evaluator`` rates ``run_id`` on ``instrument``, repeat ``repeat``.
    ``follow_up``: when the parser finds no level (or several), the evaluator is asked
    once more, in the same conversation, to state its level as JSON (structured output);
    False keeps the paper's single turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    instrument: str
    repeat: int = Field(ge=1)
    job_id: str
    evaluator: Evaluator
    forced: bool = False
    requested_by: str = "cli"
    follow_up: bool = True
    retry_of: str | None = None
    """The record of a rating that failed for a transient reason, asked again by this
    job under the same repeat (``queueing.enqueue``)."""


def evaluator_of_run(
    state: AgentState, temperature: float = DEFAULT_TEMPERATURE, seed: int | None = None
) -> Evaluator:
    """The model of a run, reached as the run reached it (resolved backend, hosts)."""
    config = state.config
    if config is None or state.backend is None:
        raise BadEvaluator(
            f"run {state.run_id} has no resolved backend (its model check did not pass)"
        )
    return evaluator_from_config(config, state.backend, temperature, seed)


def evaluator_from_config(
    config: RunConfig,
    backend: ResolvedBackend,
    temperature: float = DEFAULT_TEMPERATURE,
    seed: int | None = None,
) -> Evaluator:
    client = config.openai_client_config if backend == "openai" else None
    ran = config.model_options.as_options()
    return checked(
        Evaluator(
            model=config.model_name,
            backend=backend,
            hosts=config.llm_hosts(backend),
            api_key_env=client.api_key_env if client else None,
            timeout_s=client.timeout_s if client else config.ollama_client_config.timeout_s,
            connect_timeout_s=(
                client.connect_timeout_s
                if client
                else config.ollama_client_config.connect_timeout_s
            ),
            options={**{k: ran[k] for k in KEPT_OPTIONS if k in ran}, "temperature": temperature},
            seed=seed,
            keep_alive=config.keep_alive,
            script=config.script,
            price=config.price,
        )
    )


def named_evaluator(
    model: str,
    backend: ResolvedBackend,
    *,
    host: str | None = None,
    temperature: float = DEFAULT_TEMPERATURE,
    seed: int | None = None,
    api_key_env: str | None = None,
) -> Evaluator:
    """An evaluator given on the command line (no run of it to copy)."""
    if backend == "scripted":
        raise BadEvaluator(
            f"a scripted evaluator ({model}) needs a script: name a run of that model "
            "(its script is used) or an experiment that has it"
        )
    default = EMBEDDED_HOST if backend == "embedded" else DEFAULT_OLLAMA_HOST
    return checked(
        Evaluator(
            model=model,
            backend=backend,
            hosts=(host if host is not None else default,),
            api_key_env=api_key_env,
            options={"temperature": temperature},
            seed=seed,
        ),
        host_given=host is not None,
    )


def checked(evaluator: Evaluator, *, host_given: bool = False) -> Evaluator:
    """``evaluator`` if it can be asked: a model name of one printable line, no host
    with credentials, and a host given on the command line an http(s) URL (a run's
    hosts passed its config's checks). Checked when the rating is enqueued, so nothing
    bad is ever queued."""
    problem = model_problem(evaluator.model)
    if problem is not None:
        raise BadEvaluator(f"--evaluator {problem}")
    for host in evaluator.hosts:
        if has_credentials(host):
            where = "--host" if host_given else f"the host of evaluator {evaluator.model}"
            raise BadEvaluator(f"{where}: {CREDENTIALS_FIX}")
        problem = host_problem(host) if host_given else None
        if problem is not None:
            raise BadEvaluator(f"--host {problem}")
    return evaluator
