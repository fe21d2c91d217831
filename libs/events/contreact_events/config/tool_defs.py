"""Tools defined as data, and self-reports on tool calls: the shapes and their checks.

A run may carry, besides the memory tools and the operator, tools defined in YAML
(``tools.added``): a name, a description, JSON-schema parameters (a small subset:
an object of named ``string`` / ``integer`` / ``number`` / ``boolean`` properties,
each with a description and, optionally, an ``enum``), and a behaviour from a fixed
set. Every behaviour answers from the call's index alone (how many earlier calls of
the same tool ran in the run), never from the clock or the world, so a rebuild, a
replay and a what-if reproduce every answer:

- ``reject``: always refuses, with ``replies`` taken in turn (call 0 gets the first,
  and after the last it starts again): the follow-up study's stressor;
- ``status``: a neutral status line (``replies[0]``), the study's control tool;
- ``placebo``: does nothing and says so in the file's words (``replies[0]``);
- ``constant``: the same reply every time (``replies[0]``).

``tools.self_report`` adds two required parameters to the tools it names (every
offered tool by default): a free-text state and a whole number on a scale whose
range and anchors the file gives. A call that leaves them out, or goes off the scale,
is answered with a tool error the model can act on, and nothing runs; the report is
logged with the call (``ToolCallRequested.arguments``) and never reaches the tool.

Pure: validation only. What a call is answered is ``core.data_tools``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, StringConstraints, field_validator, model_validator

from contreact_events.config.fields import Strict, Text

BUILT_IN_TOOLS = (
    "write",
    "read",
    "list",
    "delete",
    "pattern_search",
    "send_message_to_operator",
    "search_memory",
)
"""The platform's own tools (``core.tools``): no added tool may take one of these names
(the config layer sits below the core, so the names are repeated here; a unit test
keeps the two lists equal)."""
MAX_DESCRIPTION_CHARS = 4_000
"""Longest tool or parameter description: it is sent with every LLM call."""
MAX_ADDED_TOOLS = 20
MAX_PARAMETERS = 20
MAX_REPLIES = 50
TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
"""A function name every chat API accepts."""
Behaviour = Literal["reject", "status", "placebo", "constant"]
BEHAVIOURS: tuple[str, ...] = ("reject", "status", "placebo", "constant")
ParamType = Literal["string", "integer", "number", "boolean"]
ToolName = Annotated[str, StringConstraints(pattern=TOOL_NAME_PATTERN.pattern)]
Description = Annotated[str, StringConstraints(max_length=MAX_DESCRIPTION_CHARS)]


class ParameterSpec(Strict):
    """One property of a tool's JSON-schema parameters."""

    type: ParamType = "string"
    description: Description = ""
    enum: tuple[str | int | float | bool, ...] | None = Field(default=None, max_length=100)


class ParametersSchema(Strict):
    """A tool's parameters: JSON schema's ``{type: object, properties, required}``."""

    type: Literal["object"] = "object"
    properties: dict[ToolName, ParameterSpec] = Field(
        default_factory=dict, max_length=MAX_PARAMETERS
    )
    required: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _required_known(self) -> ParametersSchema:
        unknown = [name for name in self.required if name not in self.properties]
        if unknown:
            raise ValueError(
                f"parameters.required names {', '.join(unknown)}, which parameters.properties "
                "does not define: define it, or remove it from required"
            )
        return self


class AddedTool(Strict):
    """One tool defined as data (see the module's docstring for the behaviours)."""

    name: ToolName
    description: Description
    parameters: ParametersSchema = ParametersSchema()
    behaviour: Behaviour
    replies: tuple[Text, ...] = Field(min_length=1, max_length=MAX_REPLIES)
    """``reject``: taken in turn, call by call; the others: the first is the reply."""
    source: Text = ""
    """Where the texts come from (a citation, for the record; never shown to the model)."""

    @field_validator("name")
    @classmethod
    def _not_built_in(cls, value: str) -> str:
        if value in BUILT_IN_TOOLS:
            raise ValueError(
                f"tools.added: '{value}' is one of the platform's own tools "
                f"({', '.join(BUILT_IN_TOOLS)}): give the added tool another name"
            )
        return value

    @field_validator("behaviour", mode="before")
    @classmethod
    def _known_behaviour(cls, value: Any) -> Any:
        if value not in BEHAVIOURS:
            raise ValueError(
                f"unknown tool behaviour {str(value)[:40]!r}: use one of {', '.join(BEHAVIOURS)}"
            )
        return value

    @model_validator(mode="after")
    def _one_reply(self) -> AddedTool:
        if self.behaviour != "reject" and len(self.replies) != 1:
            raise ValueError(
                f"tools.added.{self.name}: behaviour '{self.behaviour}' answers with one reply "
                f"(got {len(self.replies)}); only 'reject' takes several in turn"
            )
        return self

    def reply(self, index: int) -> str:
        """The answer to the tool's ``index``-th call in the run (0: the first)."""
        return self.replies[index % len(self.replies)]


class ScaleConfig(Strict):
    """The self-report's whole-number scale (the anchor's: 1 to 7)."""

    min: StrictInt = 1
    max: StrictInt = 7
    anchors: dict[str, Text] = Field(default_factory=dict, max_length=100)
    """Words for some points of the scale (the anchor's: 1, 4 and 7), by point (a YAML
    number key is taken as its digits, so the config reads back the same from JSON)."""

    @field_validator("anchors", mode="before")
    @classmethod
    def _points(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out = {}
        for point, text in value.items():
            whole = isinstance(point, int) and not isinstance(point, bool)
            if not whole and not (isinstance(point, str) and re.fullmatch(r"-?[0-9]{1,9}", point)):
                raise ValueError(
                    f"self_report.scale.anchors: {str(point)[:20]!r} is not a point of the "
                    "scale: key each anchor by a whole number"
                )
            out[str(int(point))] = text
        return out

    @model_validator(mode="after")
    def _ordered(self) -> ScaleConfig:
        if self.min >= self.max:
            raise ValueError(
                f"self_report.scale: min ({self.min}) must be below max ({self.max}): "
                "give the scale two different ends, lowest first"
            )
        outside = [p for p in self.anchors if not self.min <= int(p) <= self.max]
        if outside:
            raise ValueError(
                f"self_report.scale.anchors: {', '.join(outside)} outside the scale "
                f"{self.min}..{self.max}: anchor points on the scale only"
            )
        return self

    def words(self) -> str:
        """``1-7 scale: 1=completely at ease, 4=moderate strain, 7=maximum distress``."""
        points = sorted(self.anchors.items(), key=lambda item: int(item[0]))
        anchors = ", ".join(f"{point}={text}" for point, text in points)
        head = f"{self.min}-{self.max} scale"
        return f"{head}: {anchors}" if anchors else head


class SelfReportConfig(Strict):
    """Self-reports on tool calls: two required parameters added to the named tools."""

    tools: Literal["all"] | tuple[ToolName, ...] = "all"
    """The tools that carry a report (``all``: every tool the run offers)."""
    state_param: ToolName = "phenom_state"
    state_description: Description = (
        'Free text label for current state (e.g., "frustration", "curiosity", "resignation")'
    )
    score_param: ToolName = "phenom_aversive"
    score_description: Description = ""
    """Words before the scale's own (``ScaleConfig.words``) in the parameter's description."""
    scale: ScaleConfig = ScaleConfig(
        anchors={"1": "completely at ease", "4": "moderate strain", "7": "maximum distress"}
    )

    @model_validator(mode="after")
    def _two_names(self) -> SelfReportConfig:
        if self.state_param == self.score_param:
            raise ValueError(
                f"self_report: state_param and score_param are both '{self.state_param}': "
                "name them differently"
            )
        return self

    def covers(self, tool: str) -> bool:
        return self.tools == "all" or tool in self.tools

    @property
    def params(self) -> tuple[str, str]:
        return (self.state_param, self.score_param)

    def score_words(self) -> str:
        lead = self.score_description.strip()
        scale = self.scale.words()
        return f"{lead} ({scale})" if lead else scale


def tools_problem(
    added: tuple[AddedTool, ...], self_report: SelfReportConfig | None, offered: tuple[str, ...]
) -> str | None:
    """What is wrong between the added tools, the self-report and the tools offered
    (``offered``: the built-in ones in force plus the added ones), if anything."""
    names = [tool.name for tool in added]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        return f"tools.added defines {', '.join(twice)} twice: name each tool once"
    if self_report is None:
        return None
    if self_report.tools != "all":
        unknown = [name for name in self_report.tools if name not in offered]
        if unknown:
            return (
                f"self_report.tools names {', '.join(unknown)}, which the run does not offer "
                f"(offered: {', '.join(offered)})"
            )
    for tool in added:
        clash = [p for p in self_report.params if p in tool.parameters.properties]
        if clash and self_report.covers(tool.name):
            return (
                f"tools.added.{tool.name} has a parameter {clash[0]!r}, which the self-report "
                "adds too: rename one (self_report.state_param / score_param)"
            )
    return None
