"""The interface every backend implements, and the outcomes it returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from contreact_events.catalog.chat import AssistantMessage, LLMUsage
from contreact_events.config import ResolvedBackend
from contreact_events.wire.tasks import LLMTask


@dataclass(frozen=True)
class CheckOutcome:
    """Whether the backend can serve the task's model; ``detail`` says why or how to fix."""

    ok: bool
    backend: ResolvedBackend | None
    detail: str
    model_digest: str | None = None
    model: str | None = None
    """The model that will actually answer, when it differs from the task's name."""


@dataclass(frozen=True)
class ChatReply:
    """An answer. ``tool_call_error`` is set when a tool call was unreadable and the
    raw text was kept as the message content."""

    message: AssistantMessage
    usage: LLMUsage
    model: str
    tool_call_error: str | None = None


@dataclass(frozen=True)
class ChatFailure:
    """No answer: the last error, whether a later retry might work, attempts made."""

    error: str
    retryable: bool
    attempts: int
    host_down: bool = False
    """The host could not be reached (``HostUnreachable``): in a pool, the call moves."""


ChatOutcome = ChatReply | ChatFailure


class LLMBackend(Protocol):
    name: ResolvedBackend
    structured_output: bool
    """Whether a chat task's ``json_schema`` holds the answer to that schema (Ollama's
    ``format``, OpenAI's ``response_format``, llama.cpp's grammar)."""

    async def check(self, task: LLMTask) -> CheckOutcome:
        """Can this backend answer chat tasks for ``task.model`` (at ``task.host``)?"""
        ...

    async def chat(self, task: LLMTask) -> ChatOutcome:
        """One completion for ``task.messages``; never raises for backend errors."""
        ...

    async def aclose(self) -> None:
        """Release clients and models."""
        ...
