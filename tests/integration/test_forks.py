"""Forks on a real Redis, every part in this process (``tests.support.bus_run``): the
child continues with its parent's memory, its log folds, replays, rebuilds and exports;
forks of archived parents, of forks, of a parent in its last cycle; two requests for
one id; an orchestrator that dies in the middle of a fork."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import archive_path
from contreact_bus.forks import wait_for_fork
from contreact_bus.run_log import RunLog
from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.serving import serve
from contreact_cli.commands.forks import fork_run
from contreact_cli.commands.inspect import export, memory_rebuild, rebuild, replay
from contreact_cli.exceptions import CLIError
from contreact_cli.settings import CLISettings
from contreact_events.catalog import Event
from contreact_events.catalog.chat import AssistantMessage
from contreact_events.catalog.fork import RunForked
from contreact_events.catalog.tool import ToolCallCompleted
from contreact_events.core.decide import decide
from contreact_events.core.fold import fold_all
from contreact_events.exceptions import ForkRefused
from contreact_events.history.fork import cut_at_cycle, rekey
from contreact_events.names import (
    DEAD_LETTER_STREAM,
    INBOX_GROUP,
    MEMORY_TASKS_STREAM,
    run_fork_refusal_key,
    shard_lease_key,
)
from contreact_events.wire.tasks import (
    INPUT_EVENT_TYPES,
    ForkRequest,
    InboxMessage,
    LLMTask,
    fork_requested,
)
from contreact_llm.main import run as run_llm_worker
from contreact_memory.main import run as run_memory_service
from contreact_memory.store import MemoryStore
from tests.support.bus_run import BusRun, six_cycle_config
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import owning_orchestrator
from tests.support.sim import T0, Sim, make_config, say

pytestmark = pytest.mark.redis


@pytest.fixture
async def bus(aredis: aioredis.Redis, redis_url: str, tmp_path: Path) -> BusRun:
    await use_one_shard(aredis)
    settings = CLISettings(redis_url=redis_url, data_dir=tmp_path)
    orchestrator = await owning_orchestrator(aredis, settings.archive_dir, log_retention_s=60)
    return BusRun(aredis, redis_url, tmp_path, orchestrator)


def cli(bus: BusRun) -> CLISettings:
    return CLISettings(redis_url=bus.llm.redis_url, data_dir=bus.memory.data_dir)


def fork(child: str, parent: str, at_cycle: int, **request: object) -> InboxMessage:
    return fork_requested(
        child,
        ForkRequest(parent_run_id=parent, at_cycle=at_cycle, **request),
    )


async def refusal(bus: BusRun, message: InboxMessage) -> str | None:
    text = await bus.redis.get(run_fork_refusal_key(message.run_id, message.msg_id))
    return None if text is None else text.decode()


async def completed_parent(bus: BusRun, run_id: str = "parent") -> list[Event]:
    await bus.submit(six_cycle_config(run_id))
    await bus.settle()
    events = await RunLog(bus.redis).events(run_id)
    assert fold_all(events).status == "completed"
    return events


async def test_a_fork_at_cycle_3_continues_with_its_parents_memory(bus: BusRun) -> None:
    parent = await completed_parent(bus)
    await bus.send(fork("child", "parent", 3, model="other-model"))
    await bus.settle()
    events = await RunLog(bus.redis).events("child")
    state = fold_all(events)
    assert state.status == "completed" and state.cycle_number == 6
    # Cycle 4 read the key cycle 2 wrote: the memory the seed copied.
    reads = [e for e in events if isinstance(e, ToolCallCompleted) and e.tool_name == "read"]
    assert [(r.task_id, r.output, r.ok) for r in reads] == [
        ("child/c4/s1/t0", "from cycle 2", True)
    ]
    assert [e.model for e in events if e.type == "RunStarted"] == ["test-model", "other-model"]
    # The parent is unchanged, and the child's prefix is its log up to cycle 3, re-keyed.
    assert await RunLog(bus.redis).events("parent") == parent
    forked = next(e for e in events if isinstance(e, RunForked))
    assert events[: forked.prefix_len] == rekey(cut_at_cycle(parent, 3), "parent", "child")
    # rebuild equals live, replay --check passes, memory-rebuild is identical.
    settings = cli(bus)
    report = await rebuild(settings, "child")
    assert report.status == "completed" and report.equal is True, report.comparison
    assert report.digest == state.digest()
    assert await replay(settings, "child") == (len(events), _inputs(events), None)
    memory = await memory_rebuild(settings, ["child", "parent"], None)
    assert memory["identical"] is True, memory
    live = MemoryStore.open(settings.memory_db, create=False)
    try:
        assert [row[:3] for row in live.dump("child")] == [("child", "plan", "from cycle 2")]
        assert live.dump("child")[0][3] == live.dump("parent")[0][3]  # the request's time
    finally:
        live.close()
    # The export is a valid seed-003 log of the whole inherited history.
    path, counts = await export(settings, "child", settings.data_dir / "out")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert counts["CYCLE_START"] == 6 and {r["run_id"] for r in records} == {"child"}


def _inputs(events: list[Event]) -> int:
    return sum(e.type in INPUT_EVENT_TYPES for e in events)


async def test_a_fork_of_an_archived_parent(bus: BusRun) -> None:
    parent = await completed_parent(bus)
    assert archive_path(cli(bus).archive_dir, "parent").exists()
    await bus.redis.delete(*[k async for k in bus.redis.scan_iter("run:{parent}*")])
    assert not await RunLog(bus.redis).exists("parent")
    await bus.send(fork("child", "parent", 2))
    await bus.settle()
    events = await RunLog(bus.redis).events("child")
    assert fold_all(events).status == "completed"
    assert events[0].run_id == "child" and len(parent) > 0


async def test_a_fork_of_a_fork(bus: BusRun) -> None:
    await completed_parent(bus)
    await bus.send(fork("child", "parent", 2, model="second"))
    await bus.settle()
    await bus.send(fork("grandchild", "child", 4, model="third"))
    await bus.settle()
    events = await RunLog(bus.redis).events("grandchild")
    state = fold_all(events)
    assert state.status == "completed"
    assert [e.model for e in events if e.type == "RunStarted"] == ["test-model", "second", "third"]
    assert (await replay(cli(bus), "grandchild"))[2] is None
    memory = await memory_rebuild(cli(bus), ["parent", "child", "grandchild"], None)
    assert memory["identical"] is True, memory


async def test_two_forks_asking_for_one_id_one_is_accepted(bus: BusRun) -> None:
    await completed_parent(bus)
    first = await bus.send(fork("child", "parent", 3, model="a"))
    second = await bus.send(fork("child", "parent", 2, model="b"))
    await bus.settle()
    events = await RunLog(bus.redis).events("child")
    forks = [e for e in events if isinstance(e, RunForked)]
    assert [f.event_id for f in forks] == [first.msg_id]
    assert await refusal(bus, first) is None
    assert await refusal(bus, second) == "run child exists: fork with another --run-id"
    assert fold_all(events).status == "completed"


async def test_a_fork_racing_the_parents_last_cycle(bus: BusRun) -> None:
    """A fork at the parent's last cycle asked before that cycle ended is refused (with
    how far the parent got); asked again right behind the answer that ends it (in the
    inbox, in that order), it copies the whole cycle, not the RunCompleted logged in the
    same decision."""
    await bus.submit(six_cycle_config("parent"))
    early = None
    for _ in range(200):  # step the parent until its last cycle is under way
        await bus.decide_inbox()
        events = await RunLog(bus.redis).events("parent")
        if any(e.type == "CycleStarted" and e.cycle == 6 for e in events) and early is None:
            early = await bus.send(fork("child", "parent", 6, settings=("cycle_count=7",)))
            await bus.decide_inbox()
            break
        await run_llm_worker(bus.llm, burst=True)
        await run_memory_service(bus.memory, burst=True)
    assert early is not None
    assert "has not reached the end of cycle 6 (its last ended cycle is 5)" in (
        await refusal(bus, early) or ""
    )
    assert await run_llm_worker(bus.llm, burst=True) == 1  # the answer that ends cycle 6
    late = await bus.send(fork("child", "parent", 6, settings=("cycle_count=7",)))
    assert await bus.decide_inbox() == 2  # the parent's last answer, then the fork
    parent = await RunLog(bus.redis).events("parent")
    assert parent[-1].type == "RunCompleted" and parent[-2].type == "CycleEnded"
    assert await refusal(bus, late) is None
    await bus.settle()
    events = await RunLog(bus.redis).events("child")
    forked = next(e for e in events if isinstance(e, RunForked))
    assert events[forked.prefix_len - 1].type == "CycleEnded"
    assert not any(e.type == "RunCompleted" for e in events[: forked.prefix_len])
    state = fold_all(events)
    assert state.status == "completed" and state.cycle_number == 7


async def test_refusals_are_one_line_each(bus: BusRun) -> None:
    await completed_parent(bus)
    cases = [
        (fork("c1", "parent", 6), "needs cycle_count above 6"),
        (fork("c2", "parent", 2, settings=("diversity.embedding_model=x",)), "embedding_model"),
        (fork("c3", "nobody", 2), "no run 'nobody'"),
        (fork("parent", "parent", 2), "run parent exists"),
        (fork("c4", "parent", 2, settings=("nonsense=1",)), "'nonsense' is not a run setting"),
    ]
    for message, _words in cases:
        await bus.send(message)
    await bus.settle()
    for message, words in cases:
        text = await refusal(bus, message)
        assert text is not None and words in text and "\n" not in text, (words, text)
        assert not await RunLog(bus.redis).exists(message.run_id) or message.run_id == "parent"
    # The CLI refuses the same before sending anything.
    with pytest.raises(ForkRefused, match="needs cycle_count above 6"):
        await fork_run(cli(bus), "parent", 6, child_id="c9", follow=False, wait_s=1)
    await bus.send(fork("taken", "parent", 2))
    await bus.settle()
    with pytest.raises(CLIError, match="run 'taken' already exists"):
        await fork_run(cli(bus), "parent", 2, child_id="taken", follow=False, wait_s=1)


async def test_an_orchestrator_killed_mid_fork(bus: BusRun) -> None:
    """Killed after the child's append but before its tasks went out and before the
    request was acked: the next owner sends the seed again, and the redelivered request
    changes nothing (no refusal, no second copy)."""
    await completed_parent(bus)
    message = await bus.send(fork("child", "parent", 3))
    queued = await bus.redis.xlen(MEMORY_TASKS_STREAM)
    # What the dying orchestrator managed: the child's first append, nothing after it.
    dying = bus.orchestrator
    sent: list[object] = []
    dying._sender.queue = lambda pipe, task: sent.append(task)  # type: ignore[method-assign]
    original = dying.handle

    async def dies_before_ack(msg: InboxMessage) -> None:
        await original(msg)
        raise SystemExit("killed")

    dying.handle = dies_before_ack  # type: ignore[method-assign,assignment]
    with pytest.raises(SystemExit):
        await bus.decide_inbox()
    assert sent and await bus.redis.xlen(MEMORY_TASKS_STREAM) == queued
    logged = await RunLog(bus.redis).events("child")
    assert any(isinstance(e, RunForked) for e in logged)

    await bus.redis.delete(shard_lease_key(0))  # its lease ran out
    bus.orchestrator = await owning_orchestrator(
        bus.redis, cli(bus).archive_dir, owner="next", log_retention_s=60
    )
    assert await bus.redis.xlen(MEMORY_TASKS_STREAM) == queued + 1  # the seed, sent again
    assert (await bus.redis.xpending(INBOX, INBOX_GROUP))["pending"] == 1  # the request
    assert await _redeliver(bus) >= 1
    assert (await bus.redis.xpending(INBOX, INBOX_GROUP))["pending"] == 0
    await bus.settle()
    assert await refusal(bus, message) is None
    events = await RunLog(bus.redis).events("child")
    assert events[: len(logged)] == logged
    assert sum(isinstance(e, RunForked) for e in events) == 1
    assert fold_all(events).status == "completed"
    assert (await memory_rebuild(cli(bus), ["child"], None))["identical"] is True


async def _redeliver(bus: BusRun) -> int:
    """The dead orchestrator's unacked request goes to the next one (claimed at once)."""
    claim = ConsumerSettings(block_ms=20, reclaim_idle_ms=1, reclaim_every_s=0.0)
    consumer = Consumer(bus.redis, INBOX, INBOX_GROUP, "next", claim)
    return await serve(consumer, InboxMessage, bus.orchestrator.handle, burst=True)


async def test_a_run_forked_from_the_inbox_is_refused_and_kept_with_its_reason(
    bus: BusRun,
) -> None:
    """Issue 28, defect 5: ``decide`` would accept a ``RunForked`` for a run resting at its
    last cycle with an analysis open (it folds to the state a fork's prefix does); the
    orchestrator accepts only the ``RunForked`` it builds from a fork request: one from
    the inbox is dead-lettered with the reason and the run's log is left alone."""

    def talk(task: LLMTask) -> AssistantMessage:
        if task.step == 1:
            return say("", ("send_message_to_operator", {"message": "hello"}))
        return say("a reflection")

    config = make_config(
        run_id="resting", cycle_count=1, operator={"mode": "auto"}, cognition={"analysis": "model"}
    )
    sim = Sim(config)
    sim.drive([talk])
    state = sim.state
    assert (state.phase, state.status, state.cycle_number) == ("cycle_end", "running", 1)
    assert state.open_tasks  # the analysis is still out: the run rests, it has not ended
    await RunLog(bus.redis).append("resting", sim.log)
    swapped = config.model_copy(update={"model_name": "swapped", "cycle_count": 3})
    forged = InboxMessage(
        run_id="resting",
        kind="RunForked",
        data={
            "parent_run_id": "elsewhere",
            "at_cycle": 1,
            "prefix_len": state.seq,
            "parent_digest": state.digest(),
            "config": swapped.model_dump(mode="json"),
        },
    )
    assert decide(state, forged.to_event(T0)).accepted  # the core alone cannot tell
    await bus.send(forged)
    await bus.decide_inbox()
    assert await RunLog(bus.redis).events("resting") == sim.log
    letters = await bus.redis.xrange(DEAD_LETTER_STREAM)
    reasons = [fields[b"reason"].decode() for _, fields in letters]
    assert any("RunForked from the inbox is refused" in r for r in reasons), reasons


async def test_the_cli_names_a_long_default_id_and_refuses_a_model_that_names_nothing(
    bus: BusRun,
) -> None:
    """Issue 28, defect 19: ``contreact fork`` of a parent whose id is long blames the
    default fork id (no ``--set run_id`` was given), and ``--model ''`` or a model name
    with a newline is refused before anything is sent."""
    long_parent = "p" * 124
    sim = Sim(make_config(run_id=long_parent, cycle_count=3))
    sim.drive([say("a reflection")])
    await RunLog(bus.redis).append(long_parent, sim.log)
    sent = await bus.redis.xlen(INBOX)
    with pytest.raises(CLIError) as named:
        await fork_run(cli(bus), long_parent, 1, follow=False, wait_s=1)
    text = str(named.value)
    assert "the default fork id" in text and "--run-id" in text and "--set" not in text
    for model in ("", "llama3\nRunFailed"):
        with pytest.raises(ForkRefused, match=r"names no model|no control characters"):
            await fork_run(cli(bus), long_parent, 1, child_id="c", model=model, wait_s=1)
    assert await bus.redis.xlen(INBOX) == sent  # nothing was asked of the orchestrator


async def test_the_wait_reads_the_answer_at_the_prefixs_end(bus: BusRun) -> None:
    """``contreact_bus.forks.wait_for_fork``: the request's own ``RunForked`` at
    ``prefix_len`` is "logged"; another request's (or one at another length) is "taken";
    a refusal is "refused" with its line; nothing within the wait is "unanswered"."""
    parent = await completed_parent(bus)
    first = await bus.send(fork("child", "parent", 3))
    await bus.settle()
    three, two = len(cut_at_cycle(parent, 3)), len(cut_at_cycle(parent, 2))
    assert (await wait_for_fork(bus.redis, "child", first.msg_id, three, 1)).outcome == "logged"
    assert (await wait_for_fork(bus.redis, "child", "other", three, 1)).outcome == "taken"
    assert (await wait_for_fork(bus.redis, "child", first.msg_id, two, 1)).outcome == "taken"
    refused = await bus.send(fork("c2", "parent", 9))
    await bus.decide_inbox()
    answer = await wait_for_fork(bus.redis, "c2", refused.msg_id, three, 1)
    assert answer.outcome == "refused" and "has not reached the end of cycle 9" in answer.reason
    unanswered = await wait_for_fork(bus.redis, "nobody-yet", "m", three, 0.2, poll_s=0.05)
    assert unanswered.outcome == "unanswered"
