"""Errors of the LLM worker."""

from __future__ import annotations


class LLMWorkerError(Exception):
    """Base class of every error raised by contreact_llm."""


class BackendError(LLMWorkerError):
    """One call to a backend failed. ``transient`` errors are worth retrying."""

    transient = False


class TransientBackendError(BackendError):
    """Connection refused or dropped, HTTP 429 or 5xx, a simulated transient failure."""

    transient = True


class HostUnreachable(TransientBackendError):
    """The host could not be reached: a refused or reset connection, no connection
    within the connect timeout, no answer within the call's timeout. In a pool the call
    moves to another host at once (``scheduling.pool``) instead of trying this one again."""


class HostDown(LLMWorkerError):
    """A call of a pool found its host unreachable: the scheduler moves it."""

    def __init__(self, host: str, error: str) -> None:
        super().__init__(f"{host}: {error}")
        self.host = host
        self.error = error


class CheckTimedOut(BackendError):
    """A model check got no answer from its host within its time (``check_slots``)."""


class ToolCallParseError(TransientBackendError):
    """Ollama could not parse the model's tool call (HTTP 500 'error parsing tool call').

    Retried like any transient error; when retries run out the raw text is kept as a
    plain answer."""

    def __init__(self, message: str, raw_text: str) -> None:
        super().__init__(message)
        self.raw_text = raw_text


class ScriptExhausted(BackendError):
    """The scripted backend has no reply for this call index (and does not repeat)."""


class CallFailed(LLMWorkerError):
    """A call gave up: its last error and how many attempts were made."""

    def __init__(self, cause: BackendError, attempts: int) -> None:
        super().__init__(f"{cause} (after {attempts} attempt(s))")
        self.cause = cause
        self.attempts = attempts
