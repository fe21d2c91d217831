"""A fork's state follows its own config from cycle K+1 (issue 28, defect 3): a fork that
turns ``cognition.memory_block`` off shows no memory block in its prompts and gives the
heuristic analyser none of the parent's retrieved memories; a fork that turns the
diversity check off does not get the advisory its parent's cycle K earned. A fork that
keeps them keeps what the parent's cycle K left (the block is retrieved again, the
advisory is cycle K's)."""

from __future__ import annotations

from contreact_events.catalog.chat import AssistantMessage
from contreact_events.catalog.cognition import OperatorMessageAnalyzed
from contreact_events.catalog.cycle import CycleStarted
from contreact_events.core.fold import fold_all
from contreact_events.core.prompt import MEMORY_BLOCK_HEADING
from contreact_events.history.fork import cut_at_cycle
from contreact_events.history.replay import replay_check
from contreact_events.wire.tasks import LLMTask
from tests.support.fork_sim import ForkSim
from tests.support.sim import Sim, make_config, say
from tests.unit.test_memory_block import chat_tasks

SAME = "I keep a note about the boat in the harbour and think about it."


def script(task: LLMTask) -> AssistantMessage:
    """Cycle 1 writes a memory; cycle 3 asks the operator about it; every reflection is
    the same text (so each cycle from the second earns the high-similarity advisory)."""
    if task.step == 1 and task.cycle == 1:
        return say("", ("write", {"key": "boat", "value": "The boat is at the north harbour."}))
    if task.step == 1 and task.cycle == 3:
        return say("", ("send_message_to_operator", {"message": "Where is the boat moored?"}))
    return say(SAME)


def parent_run() -> Sim:
    config = make_config(
        run_id="parent",
        cycle_count=4,
        operator={"mode": "auto"},
        cognition={"memory_block": True, "memory_block_k": 2, "analysis": "heuristic"},
        diversity={"enabled": True, "embedding_model": "toy"},
    )
    sim = Sim(config)
    sim.drive([script])
    assert sim.state.status == "completed"
    return sim


def child_run(parent: Sim, settings: list[str]) -> tuple[ForkSim, list[LLMTask]]:
    child = ForkSim(parent.log, "child", 2, settings=settings)
    seen = chat_tasks(child)
    child.drive([script])
    assert child.state.status == "completed"
    assert replay_check(child.log).ok
    return child, seen


def test_the_parent_leaves_a_block_and_an_advisory_at_the_cut() -> None:
    parent = parent_run()
    at_cut = fold_all(cut_at_cycle(parent.log, 2))
    assert [m.key for m in at_cut.memory_block] == ["boat"]
    assert at_cut.next_advisory


def test_a_fork_with_the_block_and_the_check_off_follows_its_own_config() -> None:
    parent = parent_run()
    child, calls = child_run(parent, ["cognition.memory_block=false", "diversity.enabled=false"])
    own = [t for t in calls if t.cycle >= 3]
    assert own, "the fork made no call of its own"
    for task in own:
        assert MEMORY_BLOCK_HEADING not in task.messages[0].content, task.task_id
    started = [e for e in child.log if isinstance(e, CycleStarted) and e.cycle == 3]
    assert [e.advisory for e in started] == [None]
    [analysis] = [
        e for e in child.log if isinstance(e, OperatorMessageAnalyzed) and e.run_id == "child"
    ][-1:]
    assert analysis.analysis.relevant_memories == ()  # the parent's block is not offered
    assert child.state.memory_block == ()


def test_a_fork_that_keeps_them_keeps_the_block_and_cycle_ks_advisory() -> None:
    parent = parent_run()
    child, calls = child_run(parent, [])
    own = [t for t in calls if t.cycle >= 3]
    assert own and all(MEMORY_BLOCK_HEADING in t.messages[0].content for t in own)
    started = [e for e in child.log if isinstance(e, CycleStarted) and e.cycle == 3]
    assert started[0].advisory
