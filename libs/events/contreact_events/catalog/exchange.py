"""Seed 002's cognition result for one operator exchange, as pydantic models.

An exchange is the agent's message (``send_message_to_operator``) and the operator's
reply. Its analysis says what the operator's reply is (``intent``), how the exchange
relates to the run's recent exchanges (``context_type``), how sure the analyser is, how
much it is worth keeping (``persistence_score``), a summary, the keys of earlier
memories relevant to it, the reasoning, and which analyser produced it.

``intent``: ``question`` asks for information; ``request`` asks the agent to do
something; ``statement`` shares information or an opinion; ``conversation`` is social
(greetings, thanks, small talk, a bare acknowledgement).

``context_type``, judged against the recent exchanges: ``new`` opens a topic none of them
had (every exchange of a run without earlier ones is new, unless it clarifies);
``continuation`` goes on with the thread of the last exchanges; ``clarification`` asks
about, or corrects, the meaning of something already said (the agent's message
included); ``related`` is connected to a recent topic from a new angle.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Intent = Literal["question", "request", "statement", "conversation"]
ContextType = Literal["new", "continuation", "clarification", "related"]
INTENTS: tuple[Intent, ...] = ("question", "request", "statement", "conversation")
CONTEXT_TYPES: tuple[ContextType, ...] = ("new", "continuation", "clarification", "related")

MAX_SUMMARY_CHARS = 300
MAX_REASONING_CHARS = 600
MAX_RELEVANT_MEMORIES = 10
MAX_MEMORY_KEY_CHARS = 200


class Exchange(BaseModel):
    """One operator exchange: what the agent sent and what the operator answered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_message: str
    operator_reply: str


class AnalysisFields(BaseModel):
    """The fields an analyser decides: what a model is asked to answer, as JSON with
    exactly these keys (``model_answer.analysis_json_schema``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    intent: Intent
    """question | request | statement | conversation."""
    context_type: ContextType
    """new | continuation | clarification | related, against the recent exchanges."""
    confidence: float = Field(ge=0.0, le=1.0)
    """How sure the analyser is of intent and context type, 0 to 1."""
    persistence_score: float = Field(ge=0.0, le=1.0)
    """How much the exchange is worth keeping in persistent memory, 0 to 1."""
    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    """What the operator wants or says, in a sentence."""
    relevant_memories: tuple[str, ...] = Field(
        max_length=MAX_RELEVANT_MEMORIES
    )  # each key checked in model_answer
    """Keys of the run's memories relevant to the exchange, most relevant first."""
    reasoning: str = Field(min_length=1, max_length=MAX_REASONING_CHARS)
    """Why the analyser classified it so."""


class Analysis(AnalysisFields):
    """An exchange's analysis, with the analyser that produced it named."""

    analyser: Literal["heuristic", "model"]
    """``heuristic`` (the rules of ``heuristic.py``) or ``model`` (a validated JSON answer)."""
