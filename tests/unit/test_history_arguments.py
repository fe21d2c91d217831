"""A tool-call argument over its cap is refused once and then reaches later prompts
cut, with a note; the log keeps the model's whole call, and replay stays exact."""

from __future__ import annotations

from typing import Any

from contreact_events.catalog.chat import AssistantMessage, ChatMessage
from contreact_events.catalog.cycle import LLMResponded
from contreact_events.catalog.tool import ToolCallCompleted, ToolCallRequested
from contreact_events.core.decide import Decision
from contreact_events.core.fold import fold_all
from contreact_events.core.tools import bounded_arguments
from contreact_events.history.replay import replay_check
from contreact_events.wire.codec import dumps
from contreact_events.wire.tasks import LLMTask
from tests.support.sim import Sim, make_config, say

MB = 1_000_000


def sent_bytes(messages: tuple[ChatMessage, ...]) -> int:
    return sum(len(dumps(m.as_ollama(), sort_keys=True)) for m in messages)


class PromptSim(Sim):
    """Keeps the messages of every LLM call the run sends."""

    prompts: list[int]

    def answer_llm(self, message: AssistantMessage, **usage: Any) -> Decision:
        task = self.task()
        assert isinstance(task, LLMTask)
        self.prompts = [*getattr(self, "prompts", []), sent_bytes(task.messages)]
        return super().answer_llm(message, **usage)


def test_a_one_megabyte_write_is_not_resent_in_every_later_call() -> None:
    sim = PromptSim(make_config(cycle_count=2, max_steps_per_cycle=5))
    huge = "x" * MB
    replies = [
        say("", ("write", {"key": "dump", "value": huge})),
        say("", ("list", {})),
        say("", ("read", {"key": "dump"})),
        say("a reflection"),
        say("", ("list", {})),  # the next cycle: the cut call is still in the history
        say("another reflection"),
    ]
    state = sim.drive(replies)
    assert state.status == "completed"
    refused = next(e for e in sim.log if isinstance(e, ToolCallCompleted) and not e.ok)
    assert "the limit is 20000" in refused.output
    # The log keeps the model's real output; only what goes back to the model is cut.
    responded = next(e for e in sim.log if isinstance(e, LLMResponded) and e.message.tool_calls)
    assert responded.message.tool_calls[0].arguments["value"] == huge
    requested = next(e for e in sim.log if isinstance(e, ToolCallRequested))
    assert requested.arguments["value"] == huge
    first, *later = sim.prompts
    assert first < 20_000 and len(later) == 5
    assert all(20_000 < size < 40_000 for size in later), later  # were over 1,000,000 each
    writes = [m for m in state.message_history if m.tool_calls and m.tool_calls[0].name == "write"]
    cut = writes[0].tool_calls[0].arguments["value"]
    assert cut.startswith("x" * 20_000) and cut.endswith(
        "[argument cut: 1000000 characters, the first 20000 kept; the log holds the whole call]"
    )
    report = replay_check(sim.log)
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.state == fold_all(sim.log) == state


def test_calls_within_the_caps_are_sent_back_exactly_as_written() -> None:
    sim = Sim(make_config(cycle_count=1))
    call = ("write", {"key": "k" * 4_000, "value": "v" * 20_000})  # both at their cap
    state = sim.drive([say("", call, ("pattern_search", {"pattern": "k"})), say("done")])
    (assistant,) = [m for m in state.message_history if m.tool_calls]
    written = next(e for e in sim.log if isinstance(e, LLMResponded)).message.tool_calls
    assert assistant.tool_calls == written


def test_only_the_arguments_over_their_cap_are_cut() -> None:
    arguments = {"key": "k" * 11, "value": "v" * 30, "extra": ["x"] * 10}
    cut = bounded_arguments("write", arguments, value_chars=20, argument_chars=10)
    assert cut["key"].startswith("k" * 10 + "\n[argument cut: 11 characters, the first 10")
    assert cut["value"].startswith("v" * 20 + "\n[argument cut: 30 characters, the first 20")
    assert cut["extra"].startswith('["x","x","\n[argument cut: 41')  # its JSON, cut
    assert arguments["value"] == "v" * 30  # the model's call is not changed
    small = {"key": "k", "value": "v" * 20, "k": 5}
    assert bounded_arguments("write", small, value_chars=20, argument_chars=10) is small
    assert bounded_arguments("read", {"key": "k" * 99}, value_chars=1, argument_chars=None) == {
        "key": "k" * 99
    }


def test_the_cut_is_off_when_the_config_says_so() -> None:
    """Version-3 runs (upcast with ``cut_arguments_in_history: false``) sent the
    arguments back whole: so they replay."""
    config = make_config(cycle_count=1, limits={"cut_arguments_in_history": False})
    sim = PromptSim(config)
    sim.drive([say("", ("write", {"key": "dump", "value": "x" * 30_000})), say("done")])
    assert sim.prompts[1] > 30_000
    assert replay_check(sim.log).ok
