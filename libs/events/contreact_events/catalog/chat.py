"""Chat messages and LLM usage figures, shared by events, tasks and the backends."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    """A tool call as the model emitted it. ``arguments_error`` is set when the
    backend could not read the arguments as a JSON object (they are then empty)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_error: str | None = None


class AssistantMessage(_Frozen):
    """What the model answered: text, tool calls, and reasoning when the model gives it."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: str | None = None


class ChatMessage(_Frozen):
    """One message of the conversation, in Ollama's chat format."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_name: str | None = None
    thinking: str | None = None

    def as_ollama(self) -> dict[str, Any]:
        """The dict ``ollama.chat`` takes (tool calls as ``function`` objects)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"function": {"name": c.name, "arguments": c.arguments}} for c in self.tool_calls
            ]
        if self.tool_name is not None:
            out["tool_name"] = self.tool_name
        return out


class LLMUsage(_Frozen):
    """Token counts and durations of one completion (seconds; Ollama reports ns)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_s: float = 0.0
    load_s: float = 0.0
    prompt_eval_s: float = 0.0
    eval_s: float = 0.0
    wall_s: float = 0.0
    """Time the worker spent on the call, retries included."""
    done_reason: str | None = None
    attempts: int = 1
    cost: float | None = Field(default=None, ge=0)
    """What the call cost, in ``config.spend.COST_UNIT``; None: unknown (never a zero
    standing for "not known")."""
    cost_source: Literal["provider", "price_table"] | None = None
    """Where ``cost`` came from: the provider's own figure (OpenRouter's usage
    accounting), or the run's price table times the tokens."""
