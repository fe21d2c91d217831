"""Fork events: a run that begins with another run's events up to the end of one of its
cycles, re-keyed to it, and goes on under another model or other settings.

A fork's log is its parent's prefix (up to ``CycleEnded(at_cycle)``, every id re-keyed
to the child), then ``RunForked``, then the memory seed (when the prefix called the
memory service), the new model's check, ``RunStarted`` and cycle ``at_cycle + 1``.
"""

from __future__ import annotations

from typing import Any, Literal

from contreact_events.catalog.envelope import InputEvent
from contreact_events.config import RunConfig


class RunForked(InputEvent):
    """The child's first own event (input: the orchestrator builds it from a fork request
    after reading the parent). Accepted only right after the copied prefix."""

    type: Literal["RunForked"] = "RunForked"
    schema_version: Literal[3] = 3  # type: ignore[assignment]  # a raised version
    """2: the config has ``cognition.heuristic_rules`` (version 1 forks ran with rules 1),
    and ``config_in_force`` is recorded. 3: ``question`` (``contreact ask``); older forks
    read with none, which is how they ran."""
    parent_run_id: str
    at_cycle: int
    """The parent's cycle whose end the prefix ends with; the child goes on at the next."""
    prefix_len: int
    """Events copied from the parent (this event is the next one)."""
    parent_digest: str
    """``AgentState.digest()`` of the parent folded up to the end of ``at_cycle``."""
    config: RunConfig
    """The child's configuration as submitted: the parent's, with the child's run id,
    the model and the ``--set`` settings applied."""
    changes: dict[str, tuple[Any, Any]] = {}
    """What differs from the parent's configuration, by dotted path: (parent, child)
    (the run id left out)."""
    memory_calls: int = 0
    """Memory calls of the prefix that the memory service executed: the seed replays
    them into the child's memory (none: no seed)."""
    orchestrator_version: str = ""
    """The code that decided the fork (as ``RunRequested.orchestrator_version``)."""
    config_in_force: bool = True
    """The child's config holds from cycle K+1 on its state too: what the parent's made
    and the child's turns off is dropped here (cycle K's memory block when
    ``cognition.memory_block`` is off, cycle K's advisory when ``diversity.enabled`` is
    off). False: a fork recorded before that (version 1), which kept both."""
    question: str = ""
    """A researcher's question (``contreact ask``): cycle ``at_cycle + 1`` opens with
    it as a researcher's turn after the cycle's opening message
    (``core.prompt.researcher_turn``), so the answer is the child's first cycle. Empty:
    a fork without a question. Untrusted text (escape it when shown)."""


class MemorySeeded(InputEvent):
    """The memory service replayed the prefix's memory calls under the child's run id
    (input, answers the seed task)."""

    type: Literal["MemorySeeded"] = "MemorySeeded"
    task_id: str
    calls: int
    """How many calls were applied."""
    ok: bool = True
    detail: str = ""
    """When not ok: which replayed result differs from the logged one."""
