"""Issue 10 in the pure core: strict config, size caps answered as tool errors, the
prompt hash in ``LLMRequested``, the recorded prompt-text hashes, and the pinned
regeneration feedback (seed 001)."""

from __future__ import annotations

from typing import Any

import pytest

from contreact_events.catalog import SCHEMA_VERSIONS
from contreact_events.config import parse_run_config
from contreact_events.core import prompt as prompt_module
from contreact_events.exceptions import ConfigError, CorruptEvent
from contreact_events.history.replay import replay_check
from contreact_events.wire.codec import event_from_json, event_to_json
from contreact_events.wire.tasks import InboxMessage, LLMTask
from tests.support.sim import Sim, make_config, say
from tests.unit.test_regenerate_mode import PARA_A, PARA_B, regen_sim

BASE: dict[str, Any] = {"run_id": "r1", "model_name": "m", "cycle_count": 2}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"cycle_count": True}, "'cycle_count' input should be a valid integer (got True)"),
        ({"cycle_count": "10"}, "'cycle_count' input should be a valid integer (got '10')"),
        ({"cycle_count": 2.0}, "'cycle_count'"),
        ({"max_steps_per_cycle": False}, "'max_steps_per_cycle'"),
        ({"model_options": {"temperature": "0.7"}}, "'model_options.temperature'"),
        ({"model_options": {"seed": True}}, "'model_options.seed'"),
        ({"diversity": {"enabled": "yes"}}, "'diversity.enabled'"),
        ({"diversity": {"enabled": 1}}, "'diversity.enabled'"),
        ({"tools": {"search_memory": "true"}}, "'tools.search_memory'"),
        ({"experiment": "a}{b:../"}, "experiment must be 1-128 characters"),
        ({"experiment": "\x1b[31mred"}, "experiment must be 1-128 characters"),
        ({"experiment": "x" * 5_000_000}, "experiment must be 1-128 characters"),
        ({"model_name": "m" * 300}, "'model_name' string should have at most 256 characters"),
        ({"operator": {"auto_reply": "x" * 30_000}}, "'operator.auto_reply'"),
        ({"keep_alive": "10m; rm -rf"}, "'keep_alive'"),
        ({"diversity": {"natural_repetition_patterns": ["(unclosed"]}}, "not a valid regular"),
    ],
)
def test_config_is_validated_strictly(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_run_config({**BASE, **overrides})
    text = str(caught.value)
    assert message in text
    assert "\n" not in text and len(text) < 400  # one readable line, even for 5 MB


def test_a_50_mb_value_is_not_echoed_back() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_run_config({**BASE, "model_name": "m" * 50_000_000})
    assert len(str(caught.value)) < 400


def test_the_orchestrator_validates_with_the_same_strict_model() -> None:
    """A hand-made inbox message cannot slip ``cycle_count: true`` past the CLI."""
    bad = InboxMessage(
        run_id="r1", kind="RunRequested", data={"config": {**BASE, "cycle_count": True}}
    )
    with pytest.raises(CorruptEvent, match="cycle_count"):
        bad.to_event(_now())
    cross = {**BASE, "diversity": {"high_threshold": 0.5, "moderate_threshold": 0.9}}
    with pytest.raises(CorruptEvent, match="moderate_threshold must not exceed"):
        InboxMessage(run_id="r1", kind="RunRequested", data={"config": cross}).to_event(_now())


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def test_a_memory_value_over_the_cap_is_a_tool_error_the_model_can_act_on() -> None:
    sim = Sim(make_config(cycle_count=1, limits={"memory_value_chars": 100}))
    sim.start()
    decision = sim.answer_llm(say("", ("write", {"key": "big", "value": "x" * 10_000_000})))
    done = decision.events[2]
    assert done.type == "ToolCallCompleted" and not done.ok
    assert done.output == (
        "Error: value is 10000000 characters long; the limit is 100. Nothing was done. "
        "Store a shorter value, or split it across several keys."
    )
    assert sim.state.metrics.memory_write_chars == 0
    (task,) = decision.tasks  # the next LLM call: no 10 MB anywhere but in the log
    assert isinstance(task, LLMTask)
    assert sum(len(m.content) for m in task.messages[-2:]) < 500


def test_other_arguments_and_outputs_have_caps_too() -> None:
    sim = Sim(
        make_config(cycle_count=1, limits={"tool_argument_chars": 10, "tool_output_chars": 50})
    )
    sim.start()
    decision = sim.answer_llm(say("", ("read", {"key": "k" * 11})))
    assert "key is 11 characters long; the limit is 10" in decision.events[2].output
    sim.memory["a"] = "y" * 500
    sim.send(
        "LLMResponded", sim.task().task_id, message=say("", ("read", {"key": "a"})).model_dump()
    )
    decision = sim.answer_memory()
    assert decision.events[0].output == "y" * 500  # the log keeps the whole output
    tool_message = sim.state.message_history[-1]
    assert tool_message.content.startswith("y" * 50 + "\n[output cut: 500 characters")


def test_llm_requested_carries_the_hash_of_what_is_sent() -> None:
    sim = Sim(make_config(cycle_count=1))
    decision = sim.start()
    requested = decision.events[-1]
    (task,) = decision.tasks
    assert requested.type == "LLMRequested" and isinstance(task, LLMTask)
    import hashlib

    from contreact_events.wire.codec import dumps

    def digest(message: Any) -> bytes:  # the definition, computed afresh
        return hashlib.sha256(dumps(message.as_ollama(), sort_keys=True)).digest()

    chain = bytes(32)
    for message in task.messages[1:]:
        chain = hashlib.sha256(chain + digest(message)).digest()
    total = hashlib.sha256(hashlib.sha256(dumps(list(task.tools), sort_keys=True)).digest())
    total.update(digest(task.messages[0]))
    total.update(chain)
    assert requested.prompt_sha256 == total.hexdigest()
    assert requested.prompt_sha256 == prompt_module.sha256_of_prompt(task.messages, task.tools)


def test_the_prompt_hash_is_the_hash_of_every_call_sent() -> None:
    """The cached chain equals the definition for every call of a run with
    regenerations (pinned feedback in the middle), final calls and long histories."""
    sim = regen_sim(max_attempts=3)
    sim.start()
    replies = [say(PARA_A), say(PARA_A), say("", ("list", {})), say(PARA_B), say(PARA_A)]
    checked = 0
    for reply in replies:
        (task,) = sim.tasks
        if isinstance(task, LLMTask):
            requested = sim.log[-1]
            assert requested.type == "LLMRequested"
            expected = prompt_module.sha256_of_prompt(task.messages, task.tools)
            assert requested.prompt_sha256 == expected
            checked += 1
            sim.answer_llm(reply)
        while sim.tasks and not isinstance(sim.tasks[0], LLMTask):
            sim.answer_embedding() if sim.tasks[
                0
            ].__class__.__name__ == "EmbedTask" else sim.answer_memory()


def test_replay_catches_a_change_in_prompt_assembly(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = Sim(make_config(cycle_count=2))
    sim.drive([say("a reflection")])
    assert replay_check(sim.log).ok
    original = prompt_module.system_message

    def changed(state: Any) -> Any:
        message = original(state)
        return message.model_copy(update={"content": message.content + " "})

    monkeypatch.setattr(prompt_module, "system_message", changed)
    report = replay_check(sim.log)
    assert report.divergence is not None
    assert "LLMRequested" in report.divergence.describe()
    assert "prompt_sha256" in report.divergence.describe()


def test_run_started_records_the_hashes_of_the_prompt_texts() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.start()
    started = next(e for e in sim.log if e.type == "RunStarted")
    assert set(started.prompt_hashes) >= {
        "system_prompt",
        "system_prompt_with_tools",
        "tools_paragraph",
        "cycle_start_message",
        "advisory_high",
        "advisory_moderate",
        "regeneration_request",
        "final_call_note",
    }
    assert all(len(h) == 64 for h in started.prompt_hashes.values())


def test_new_fields_round_trip_and_old_versions_read_as_not_recorded() -> None:
    sim = Sim(make_config(cycle_count=1))
    sim.drive([say("done")])
    for event in sim.log:
        assert event_from_json(event_to_json(event)) == event
    assert SCHEMA_VERSIONS["LLMRequested"] == 2 and SCHEMA_VERSIONS["RunStarted"] == 5
    old = event_to_json(next(e for e in sim.log if e.type == "LLMRequested"))
    old_dict = __import__("orjson").loads(old)
    del old_dict["prompt_sha256"]
    old_dict["schema_version"] = 1
    assert event_from_json(__import__("orjson").dumps(old_dict)).prompt_sha256 is None


def test_regeneration_feedback_stays_where_the_rejected_answer_was() -> None:
    """Seed 001 augments the request once; the new attempt's tool calls and results
    follow the feedback, they do not push it after themselves."""
    sim = regen_sim()
    sim.start()
    sim.answer_llm(say(PARA_A))
    sim.answer_paragraphs()
    sim.answer_embedding()
    sim.answer_llm(say(PARA_A))
    decision = sim.answer_paragraphs()
    regen = decision.events[1]
    assert regen.type == "RegenerationRequested" and regen.pinned
    (task,) = decision.tasks
    assert task.messages[-1].content == regen.feedback
    # The new attempt calls a tool first: the feedback stays before the call.
    sim.answer_llm(say("", ("list", {})))
    decision = sim.answer_memory()
    (task,) = decision.tasks
    roles = [(m.role, m.content == regen.feedback) for m in task.messages[-3:]]
    assert roles == [("user", True), ("assistant", False), ("tool", False)]
    assert sum(m.content == regen.feedback for m in task.messages) == 1
    sim.answer_llm(say(PARA_B))
    sim.answer_paragraphs()
    assert sim.state.regeneration_feedback is None and sim.state.regeneration_at is None
    assert replay_check(sim.log).ok


def test_runs_recorded_before_keep_the_old_placement_on_replay() -> None:
    sim = regen_sim(feedback_placement="after_newest")
    sim.start()
    sim.answer_llm(say(PARA_A))
    sim.answer_paragraphs()
    sim.answer_embedding()
    sim.answer_llm(say(PARA_A))
    decision = sim.answer_paragraphs()
    assert decision.events[1].pinned is False
    sim.answer_llm(say("", ("list", {})))
    decision = sim.answer_memory()
    (task,) = decision.tasks
    assert task.messages[-1].role == "user"  # after the newest tool result, as before
