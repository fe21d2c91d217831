"""Diversity events: reflection embeddings and the similarity assessment (seed 000).

Where seed 001's feedback stands: the seed augments the request once and generates
again, and in a ReAct loop the new attempt may call tools before it answers. The
feedback is therefore pinned: ``RegenerationRequested(pinned=True)`` records its place
(``AgentState.regeneration_at``, the history's length once the rejected answer is
removed) and ``prompt_messages`` puts it there for every call of the attempt, so the
attempt's tool calls come after it, as after any user turn. Only the newest feedback is
in the prompt, and it leaves when the cycle's reflection is recorded. Before
configuration version 3 it was appended after the newest message of every call;
``diversity.feedback_placement: after_newest`` keeps that for the replay of those runs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from contreact_events.catalog.envelope import EventBase, InputEvent

SimilarityLevel = Literal["high", "moderate", "none"]

TORCH_RUNTIME = "torch"
"""What ran the model of an embedding recorded before the runtime was (schema
version 1 of ``ReflectionEmbedded`` and ``ParagraphsChecked``): sentence-transformers
on PyTorch, the only runtime there was."""


class ChunkMatch(BaseModel):
    """A paragraph (or window) of an attempt that is close to a corpus chunk."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    paragraph_index: int
    score: float
    matched_id: str
    matched_text: str


class EmbeddingRequested(EventBase):
    """The cycle's reflection was sent to the embedder; the cycle ends when it answers."""

    type: Literal["EmbeddingRequested"] = "EmbeddingRequested"
    task_id: str
    cycle: int


class ReflectionEmbedded(InputEvent):
    """Input from the embedder. The vector lives in the log, so a run's similarity
    history is rebuilt without the model."""

    type: Literal["ReflectionEmbedded"] = "ReflectionEmbedded"
    schema_version: Literal[2] = 2  # type: ignore[assignment]  # a raised version
    """2: ``runtime`` (version 1 events read as ``torch``, which is what ran them)."""
    task_id: str
    cycle: int
    vector: tuple[float, ...]
    model: str
    truncated: bool = False
    """The text was longer than the model reads (its tail did not count)."""
    runtime: str = TORCH_RUNTIME
    """What ran the model: ``torch`` (sentence-transformers on PyTorch) or ``onnx``
    (the same weights exported to ONNX, run by ONNX Runtime); their vectors agree
    within 1e-4 cosine."""


class EmbeddingFailed(InputEvent):
    """Input from the embedder: the reflection could not be embedded. The cycle ends
    without an assessment; the run goes on."""

    type: Literal["EmbeddingFailed"] = "EmbeddingFailed"
    task_id: str
    cycle: int
    error: str


class SimilarityAssessed(EventBase):
    """Seed 000's check of a cycle's reflection against every earlier one."""

    type: Literal["SimilarityAssessed"] = "SimilarityAssessed"
    cycle: int
    max_similarity: float | None
    """Highest cosine similarity to an earlier reflection (None: nothing to compare)."""
    most_similar_cycle: int | None
    level: SimilarityLevel
    advisory: str | None
    """Appended to the next cycle's system prompt."""
    similarities: tuple[tuple[int, float], ...] = ()
    """(earlier cycle, cosine similarity) for every earlier embedded reflection: the
    rows of the run's similarity matrix."""
    note: str = ""


class ParagraphCheckRequested(EventBase):
    """Regenerate mode: the answer's paragraphs go to the embedder, to be compared with
    the corpus of earlier accepted paragraphs (seed 001)."""

    type: Literal["ParagraphCheckRequested"] = "ParagraphCheckRequested"
    task_id: str
    cycle: int
    attempt: int
    scope: str
    """``run:{run_id}`` or ``experiment:{name}``."""


class ParagraphsChecked(InputEvent):
    """Input from the embedder: one attempt's paragraphs, their vectors, its score and
    the seed's feedback. Every attempt is in the log."""

    type: Literal["ParagraphsChecked"] = "ParagraphsChecked"
    schema_version: Literal[2] = 2  # type: ignore[assignment]  # a raised version
    """2: ``runtime`` (version 1 events read as ``torch``, which is what ran them)."""
    task_id: str
    cycle: int
    attempt: int
    paragraphs: tuple[str, ...]
    vectors: tuple[tuple[float, ...], ...]
    overall_similarity: float
    """Highest similarity of any paragraph (or window) to the corpus; 0 when none."""
    is_unique: bool
    matches: tuple[ChunkMatch, ...] = ()
    feedback: str = ""
    corpus_chunks: int = 0
    """Size of the corpus the attempt was compared with."""
    windows: bool = False
    """Compared as sliding windows of paragraphs (the corpus was large)."""
    runtime: str = TORCH_RUNTIME
    """What ran the model that made ``vectors`` (as ``ReflectionEmbedded.runtime``)."""


class RegenerationRequested(EventBase):
    """The attempt repeated earlier content: the model is asked again, the feedback
    put before its turn."""

    type: Literal["RegenerationRequested"] = "RegenerationRequested"
    schema_version: Literal[2] = 2  # type: ignore[assignment]  # a raised version
    """2: ``pinned`` (version 1 events read as False, which is how they ran)."""
    cycle: int
    attempt: int
    """The number of the attempt asked for now (2 for the first regeneration)."""
    feedback: str
    """The text given to the model (seed 001's augmented prompt)."""
    pinned: bool = True
    """The feedback stays where the rejected answer was, before the tool calls and
    results of the new attempt (seed 001: the request is augmented once, then the
    model works). False (version 1): it was put after the newest message of every
    call of the attempt."""


class ParagraphsAccepted(EventBase):
    """An attempt's paragraphs join the corpus (their vectors are in its ParagraphsChecked)."""

    type: Literal["ParagraphsAccepted"] = "ParagraphsAccepted"
    cycle: int
    attempt: int
    scope: str
    similarity: float
    relaxed: bool = False
    """Accepted under the relaxed threshold once the attempts ran out."""


class TopicExhausted(EventBase):
    """Every attempt repeated earlier content beyond the relaxed threshold; the best one
    is accepted anyway: never an endless loop."""

    type: Literal["TopicExhausted"] = "TopicExhausted"
    cycle: int
    attempts: int
    best_attempt: int
    best_similarity: float
