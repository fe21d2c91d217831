"""The interface every backend implements, and the outcomes it returns."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
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


class Backends(Mapping[str, LLMBackend]):
    """The worker's backends by name, each built at its first task: a backend's client
    library is imported only by a worker that serves it (``openai`` alone cost every
    LLM worker's start 0.3-0.5 CPU-s, in every stack, most of which never call it)."""

    def __init__(
        self,
        factories: Mapping[str, Callable[[], LLMBackend]],
        *,
        built: Mapping[str, LLMBackend] | None = None,
    ) -> None:
        self._factories = dict(factories)
        self._built = dict(built or {})
        """``built``: backends made already (a test's, a benchmark's)."""

    def __getitem__(self, name: str) -> LLMBackend:
        if name not in self._built:
            self._built[name] = self._factories[name]()
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._factories), **dict.fromkeys(self._built)})

    def __len__(self) -> int:
        return len(self._factories.keys() | self._built.keys())

    def built(self) -> list[LLMBackend]:
        """The backends a task has used (the ones with clients or a model to release)."""
        return list(self._built.values())
