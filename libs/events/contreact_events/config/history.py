"""``history``: what a run does with a message history that outgrows the model's
context, after the paper author's harness (``szeider/contreact``: compaction and
truncation, one or the other).

- ``none`` (the default, and how every run recorded before ran): every prompt carries
  the whole history.
- ``truncate``: every prompt carries the system message and the last ``keep_last``
  messages (moved on past tool results whose call was cut, so no result is orphaned);
  the log keeps everything, and the window is a function of the history alone.
- ``compact``: at the start of a cycle, when the history not yet summarised passes
  ``threshold_messages`` messages (or the last call's prompt passed
  ``threshold_tokens`` tokens), the run asks a model (``model``, default its own) to
  summarise everything but the last ``keep_last`` messages, as a logged task
  (``HistoryCompactionRequested``, answered by ``LLMResponded``); from then on its
  prompts carry the summary as one user turn in place of the older part. The log holds
  the request and the answer, so prompts are built from the log and replay reproduces
  every prompt hash.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, model_validator

from contreact_events.config.fields import Name, Strict, Text

DEFAULT_COMPACTION_PROMPT = (
    "You are summarising the earlier part of your own history in a long-running "
    "session, so that you can go on without it. Write a concise summary, in the first "
    "person, of what happened: what you did and found, what you stored in memory and "
    "under which keys, what the operator said, and what you meant to do next. Keep "
    "names, keys and numbers exact. Answer with the summary alone."
)
SUMMARY_TURN = "Summary of your earlier history (written when it grew too long):\n\n{summary}"
"""The user turn that stands for the summarised part in every later prompt."""


class HistoryConfig(Strict):
    policy: Literal["none", "truncate", "compact"] = "none"
    keep_last: StrictInt = Field(default=40, ge=4, le=100_000)
    """Messages kept whole after the system message (truncate and compact)."""
    threshold_messages: StrictInt | None = Field(default=60, gt=0)
    """``compact``: summarise when the history not yet summarised passes this many
    messages (None: by tokens only)."""
    threshold_tokens: StrictInt | None = Field(default=None, gt=0)
    """``compact``: or when the last call's prompt passed this many tokens."""
    model: Name | None = None
    """``compact``: the model that summarises (default: the run's, on its backend)."""
    prompt: Text = DEFAULT_COMPACTION_PROMPT
    """``compact``: the instruction the summary is asked for with."""

    @model_validator(mode="after")
    def _consistent(self) -> HistoryConfig:
        if self.policy != "compact":
            return self
        if self.threshold_messages is None and self.threshold_tokens is None:
            raise ValueError("history.policy compact needs threshold_messages or threshold_tokens")
        if self.threshold_messages is not None and self.threshold_messages <= self.keep_last:
            raise ValueError(
                f"history.threshold_messages ({self.threshold_messages}) must be above "
                f"history.keep_last ({self.keep_last}): the summary replaces the older part"
            )
        return self
