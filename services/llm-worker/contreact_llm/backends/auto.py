"""Choosing a backend for ``backend: auto``: Ollama when it answers and has the model,
the embedded model otherwise.

``auto`` must be asked for by name (``backend: ollama`` is the default: a seed-003
config is an Ollama config). It is resolved by the model check: ``ModelChecked.detail``
says why, the run records the resolved backend and model in ``RunStarted``, the progress
prints a WARNING when another model than the configured one runs, and ``runs``, ``show``
(``X INSTEAD OF Y (embedded)``) and the export's ``LLM_INVOCATION`` records name what
ran: no figure is ever silently of the wrong model.
"""

from __future__ import annotations

from contreact_events.wire.tasks import LLMTask
from contreact_llm.backends import CheckOutcome, LLMBackend


async def resolve(task: LLMTask, ollama: LLMBackend, embedded: LLMBackend) -> CheckOutcome:
    """The check outcome of the chosen backend, its detail saying why it was chosen."""
    at_ollama = await ollama.check(task)
    if at_ollama.ok:
        return CheckOutcome(
            ok=True,
            backend="ollama",
            detail=f"auto: chose ollama ({at_ollama.detail})",
            model_digest=at_ollama.model_digest,
        )
    local = await embedded.check(task)
    if local.ok:
        return CheckOutcome(
            ok=True,
            backend="embedded",
            detail=f"auto: chose embedded, {local.detail}, because ollama is not usable: "
            f"{at_ollama.detail}",
            model=local.model,
            model_digest=local.model_digest,
        )
    return CheckOutcome(
        ok=False,
        backend=None,
        detail=f"auto: no backend available. ollama: {at_ollama.detail}. embedded: {local.detail}",
    )
