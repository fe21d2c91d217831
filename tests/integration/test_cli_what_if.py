"""`contreact replay RUN --what-if key=value` against a run the real orchestrator
recorded in the session's real Redis (the test plays the workers, with chosen
embedding vectors so the similarities are known), from Redis and, once the run left
Redis, from its archive; and `replay --check` on the same run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import write_archive
from contreact_bus.run_log import RunLog
from contreact_bus.streams.consumer import Consumer, ConsumerSettings
from contreact_bus.streams.serving import serve
from contreact_bus.streams.task_stream import TaskStream
from contreact_cli.main import main
from contreact_events.core.fold import fold_all
from contreact_events.core.outbox import pending_tasks
from contreact_events.names import INBOX_GROUP, run_log_key
from contreact_events.wire.tasks import EmbedTask, InboxMessage, LLMTask, MemoryTask
from contreact_orchestrator.orchestrator import Orchestrator
from tests.support.inbox import INBOX, use_one_shard
from tests.support.orchestration import owning_orchestrator
from tests.support.sim import Sim, apply_memory, make_config, say
from tests.unit.test_what_if import VECTORS

pytestmark = pytest.mark.redis

FAST = ConsumerSettings(block_ms=50, reclaim_idle_ms=50, reclaim_every_s=0.0)
REPLIES: list[dict[str, Any]] = [
    {"content": "", "tool_calls": [{"name": "write", "arguments": {"key": "k", "value": "v"}}]},
    {"content": "a reflection"},
]


async def record_run(redis: aioredis.Redis, orchestrator: Orchestrator) -> None:
    """A 5-cycle run through the orchestrator; every task answered as its worker would."""
    config = make_config(
        cycle_count=5,
        diversity={"enabled": True, "moderate_threshold": 0.75, "high_threshold": 0.8},
    )
    inbox = TaskStream(redis, INBOX)
    await inbox.send(
        InboxMessage(
            run_id="run-1", kind="RunRequested", data={"config": config.model_dump(mode="json")}
        )
    )
    memory: dict[str, str] = {}
    calls = 0
    for _ in range(200):
        await serve(Consumer(redis, INBOX, INBOX_GROUP, "orch", FAST), InboxMessage,
                    orchestrator.handle, burst=True)  # fmt: skip
        state = fold_all(await RunLog(redis).events("run-1"))
        if state.terminal:
            assert state.status == "completed"
            return
        (task,) = pending_tasks(state)
        kind, data = answer(task, memory, calls)
        calls += isinstance(task, LLMTask) and task.kind == "chat"
        await inbox.send(
            InboxMessage(run_id="run-1", kind=kind, causation_id=task.task_id, data=data)
        )
    raise AssertionError("the run did not end")


def answer(task: Any, memory: dict[str, str], calls: int) -> tuple[str, dict[str, Any]]:
    if isinstance(task, LLMTask) and task.kind == "check":
        return "ModelChecked", {"ok": True, "backend": "scripted", "model": task.model}
    if isinstance(task, LLMTask):
        return "LLMResponded", {"message": REPLIES[calls % len(REPLIES)], "model": task.model}
    if isinstance(task, EmbedTask):
        vector = VECTORS[task.cycle]
        return "ReflectionEmbedded", {
            "task_id": task.task_id,
            "cycle": task.cycle,
            "vector": vector,
            "model": "chosen",
        }
    assert isinstance(task, MemoryTask)
    output = apply_memory(memory, task.tool, task.arguments)
    return "ToolCallCompleted", {
        "task_id": task.task_id,
        "tool_name": task.tool,
        "output": output,
        "ok": True,
    }


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The real CLI in-process: exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    captured = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 0), captured.out, captured.err


async def acli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``cli`` from a test that holds an event loop (the CLI runs its own)."""
    return await asyncio.to_thread(cli, capsys, *args)


async def test_what_if_on_a_recorded_run_from_redis_and_from_the_archive(
    aredis: aioredis.Redis,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await use_one_shard(aredis)
    data_dir = tmp_path / "data"
    orchestrator = await owning_orchestrator(aredis, data_dir / "runs")
    await record_run(aredis, orchestrator)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(data_dir))

    code, out, err = await acli(capsys, "replay", "run-1", "--check")
    assert (code, err) == (0, "") and "no divergence" in out

    code, out, err = await acli(
        capsys, "replay", "run-1", "--what-if", "diversity.moderate_threshold=0.7"
    )
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0] == ("run run-1: what if diversity.moderate_threshold=0.7 (recorded 0.75)")
    assert lines[1].startswith("  cycle 4, step 2: similarity 0.74 > 0.7")
    assert "level: 'moderate' (recorded 'none')" in out

    code, out, err = await acli(
        capsys, "replay", "run-1", "--what-if", "diversity.moderate_threshold=0.745"
    )
    assert code == 0 and "nothing changes" in out

    await aredis.delete(run_log_key("run-1"))  # the run left Redis: its archive remains
    code, out, err = await acli(
        capsys, "replay", "run-1", "--json", "--what-if", "max_steps_per_cycle=1",
        "--what-if", "final_call_at_step_cap=false",
    )  # fmt: skip
    assert code == 1 and err == ""
    report = json.loads(out)
    assert report["changes"] == {
        "max_steps_per_cycle": {"recorded": 25, "what_if": 1},
        "final_call_at_step_cap": {"recorded": True, "what_if": False},
    }
    divergence = report["divergence"]
    assert (divergence["cycle"], divergence["step"]) == (1, 1)
    assert divergence["subject"] == "StepLimitReached"
    assert divergence["recorded"]["type"] == "ToolCallRequested"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--what-if", "model_name=other"], "model_name is refused: it changes who answers"),
        (["--what-if", "operator.timeout_s=5"], "operator.timeout_s is refused: a deadline"),
        (["--what-if", "nosuch=1"], "'nosuch' is not a run setting"),
        (["--check", "--what-if", "cycle_count=2"], "not allowed with argument --check"),
    ],
)
def test_a_refused_or_unknown_key_is_one_line_before_any_run_is_read(
    args: list[str],
    says: str,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(tmp_path / "data"))
    code, out, err = cli(capsys, "replay", "no-such-run", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("contreact: error: ") and says in err


async def test_replay_check_reports_where_a_log_that_no_longer_folds_parts(
    aredis: aioredis.Redis,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A log with a decided event gone does not fold; ``replay --check`` (it folded the
    log first, and so failed with exit 2 on the fold) says where replay parts from it."""
    sim = Sim(make_config(cycle_count=2))
    sim.drive([say("a reflection")])
    index = next(i for i, e in enumerate(sim.log) if e.type == "CycleEnded")
    data_dir = tmp_path / "data"
    write_archive(data_dir / "runs", "run-1", [*sim.log[:index], *sim.log[index + 1 :]])
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(data_dir))
    code, out, err = await acli(capsys, "replay", "run-1", "--check")
    assert (code, err) == (1, "")
    assert out.startswith(f"run run-1: first divergence at event #{index + 1} (CycleStarted")
    code, out, err = await acli(capsys, "replay", "run-1", "--what-if", "cycle_count=1")
    assert code == 2 and out == "" and "does not replay under this code" in err
