"""A model's input made from a run's log and pinned to it, pure: what a rating
(``history.evaluation``) and a query (``history.interview``) send alike.

The messages are a system message, the history as the agent's prompts carried it
(``core.compaction.window``), then one user turn; the hash of those messages
(``prompt.sha256_of_prompt``, no tools), the log position they were folded at and the
state's digest are recorded with the answer, so the input can be rebuilt from the log
later and compared (``PinnedInput.difference``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Self

from contreact_events.catalog.chat import ChatMessage
from contreact_events.core.compaction import window
from contreact_events.core.prompt import sha256_of_prompt
from contreact_events.core.state import AgentState


class Pinned(Protocol):
    """What a record of an answer says of its input (``RunAssessed``, ``RunQueried``)."""

    @property
    def input_sha256(self) -> str: ...
    @property
    def run_events(self) -> int: ...
    @property
    def run_digest(self) -> str: ...
    @property
    def state_shape(self) -> str: ...


@dataclass(frozen=True)
class PinnedInput:
    """What a model is sent, and what pins it to the run."""

    messages: tuple[ChatMessage, ...]
    """System message, the history, then the user turn."""
    input_sha256: str
    """``sha256_of_prompt(messages, tools=())``."""
    run_events: int
    """How many events of the log the history is folded from (the log position)."""
    run_digest: str
    """``AgentState.digest()`` after those events."""
    state_shape: str
    """``AgentState.shape()``: the digest compares only between equal shapes."""

    @classmethod
    def asking(
        cls, folded: AgentState, system: ChatMessage, turn: str, run_events: int, **more: Any
    ) -> Self:
        """``turn`` asked of the agent of ``folded`` (the state of the log's first
        ``run_events`` events) after ``system`` and its history; ``more``: the fields of
        the subclass."""
        lead, start = window(folded)  # ``history``: what the agent's prompts carried of it
        messages = (
            system,
            *lead,
            *folded.message_history[start:],
            ChatMessage(role="user", content=turn),
        )
        return cls(
            messages=messages,
            input_sha256=sha256_of_prompt(messages, ()),
            run_events=run_events,
            run_digest=folded.digest(),
            state_shape=AgentState.shape(),
            **more,
        )

    def difference(self, recorded: Pinned, *, reader: str, name: str) -> str | None:
        """None when this input, rebuilt from the log, is the one ``recorded`` pinned;
        else one line: the log position, the run's digest (between equal shapes) or
        the input's hash that differs. ``reader`` and ``name`` say whose (``the
        rating``, ``evaluator input``)."""
        if self.run_events != recorded.run_events:
            return (
                f"{reader} read {recorded.run_events} events of the log, the log now gives "
                f"{self.run_events}"
            )
        if recorded.state_shape == self.state_shape and self.run_digest != recorded.run_digest:
            return (
                f"run digest differs at event {recorded.run_events}: recorded "
                f"{recorded.run_digest[:12]}, rebuilt {self.run_digest[:12]}"
            )
        if self.input_sha256 != recorded.input_sha256:
            return (
                f"{name} differs: recorded sha256 {recorded.input_sha256[:12]}, "
                f"rebuilt {self.input_sha256[:12]}"
            )
        return None
