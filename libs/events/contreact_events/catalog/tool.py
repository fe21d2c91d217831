"""Tool and operator events."""

from __future__ import annotations

from typing import Any, Literal

from contreact_events.catalog.envelope import EventBase, InputEvent


class ToolCallRequested(EventBase):
    """One tool call of a response. Calls of one response run one after another."""

    type: Literal["ToolCallRequested"] = "ToolCallRequested"
    task_id: str
    cycle: int
    step: int
    index: int
    tool_name: str
    arguments: dict[str, Any]
    arguments_error: str | None = None


class ToolCallCompleted(InputEvent):
    """A tool call's output, as given back to the model. ``causation_id`` is its task."""

    type: Literal["ToolCallCompleted"] = "ToolCallCompleted"
    task_id: str
    tool_name: str
    output: str
    ok: bool = True


class OperatorMessageSent(EventBase):
    type: Literal["OperatorMessageSent"] = "OperatorMessageSent"
    task_id: str
    cycle: int
    message: str


class OperatorReplied(InputEvent):
    """The operator's answer: input from ``contreact reply``, the automatic policy, or
    the policy reply given when a person did not answer within ``operator.timeout_s``."""

    type: Literal["OperatorReplied"] = "OperatorReplied"
    schema_version: Literal[2] = 2  # type: ignore[assignment]  # a raised version
    """2: ``by`` may be ``timeout`` (version 1 knew operator and policy only)."""
    task_id: str
    text: str
    by: Literal["operator", "policy", "timeout"] = "operator"
