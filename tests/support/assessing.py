"""For the assessment tests and the benchmark: finished runs made by the core's own
driver, an LLM worker serving in the test's loop, and rq workers as processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import redis

from contreact_bus.archive import write_archive
from contreact_bus.assessments.queueing import queue
from contreact_bus.llm_routes import llm_task_stream
from contreact_events.catalog import Event
from contreact_events.catalog.chat import ChatMessage
from contreact_events.core.fold import fold_all
from contreact_events.core.state import AgentState
from contreact_events.names import ACTIVE_RUNS
from contreact_events.wire.tasks import LLMTask
from contreact_llm.main import run as run_llm_worker
from contreact_llm.settings import LLMWorkerSettings
from tests.support.orchestration import ask_for
from tests.support.sim import Sim, make_config, say

ROOT = Path(__file__).resolve().parents[2]


def finished_run(
    run_id: str, model: str, answer: str, *, cycles: int = 2, **config: Any
) -> list[Event]:
    """A completed run of ``model`` whose script answers ``answer`` to every call
    (so, rated by this model, it answers ``answer`` too)."""
    config.setdefault("script", {"replies": [{"content": answer}], "repeat": True})
    sim = Sim(make_config(run_id=run_id, model_name=model, cycle_count=cycles, **config))
    state = sim.drive([say(f"{model} reflects on cycle {{cycle}}.")])
    assert state.status == "completed", state.status
    return sim.log


def archive_runs(archive_dir: Path, runs: Sequence[Sequence[Event]]) -> list[AgentState]:
    """Archive each run (as the orchestrator does when a run ends); their states."""
    states = []
    for events in runs:
        state = fold_all(events)
        write_archive(archive_dir, state.run_id, list(events))
        states.append(state)
    return states


@contextlib.asynccontextmanager
async def llm_worker(redis_url: str, **changes: Any) -> AsyncIterator[LLMWorkerSettings]:
    """An LLM worker serving in this loop until the block ends."""
    settings = LLMWorkerSettings(
        redis_url=redis_url,
        consumer_name=changes.pop("consumer_name", "llm-under-test"),
        poll_s=0.1,
        backoff_base_s=0.001,
        **changes,
    )
    stop = asyncio.Event()
    serving = asyncio.create_task(run_llm_worker(settings, stop=stop))
    try:
        yield settings
    finally:
        stop.set()
        await asyncio.wait_for(serving, 30)


def assessor_env(redis_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTREACT_")}
    env.update(
        REDIS_URL=redis_url,
        CONTREACT_DATA_DIR=str(data_dir),
        CONTREACT_ASSESS_REPLY_TIMEOUT_S="30",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def start_assessor(
    env: dict[str, str], *, burst: bool = True, log: Path | None = None
) -> subprocess.Popen[bytes]:
    """An assessor (rq worker) process, in a process group of its own (its work
    horses die with it when the group is killed)."""
    args = [sys.executable, "-m", "contreact_assessor", *(["--burst"] if burst else [])]
    out = log.open("ab") if log is not None else subprocess.DEVNULL
    return subprocess.Popen(
        args, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


async def wait_process(proc: subprocess.Popen[bytes], timeout_s: float = 120) -> int:
    """Wait for a process without blocking the loop (the LLM worker serves in it)."""
    for _ in range(int(timeout_s * 10)):
        code = proc.poll()
        if code is not None:
            return code
        await asyncio.sleep(0.1)
    kill_group(proc)
    raise AssertionError(f"process {proc.args!r} did not end within {timeout_s} s")


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL an assessor and everything it started: its process group, and its rq
    work horses, which rq puts in process groups of their own (``os.setpgrp``)."""
    for pid in [*_descendants(proc.pid), proc.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@contextlib.contextmanager
def rq_queue(redis_url: str) -> Iterator[Any]:
    connection = redis.Redis.from_url(redis_url)
    try:
        yield queue(connection)
    finally:
        connection.close()


def clean_abandoned(redis_url: str, env: dict[str, str], *, after_s: float) -> None:
    """rq's cleanup of abandoned jobs, as a worker's maintenance runs it (in a process
    of its own: the failure callbacks run under rq's SIGALRM timeout, main thread only),
    with the clock ``after_s`` ahead (rather than waiting out the entries' expiry)."""
    code = (
        "import sys, time, redis\n"
        "from contreact_bus.assessments.queueing import queue\n"
        "from rq.registry import StartedJobRegistry\n"
        "q = queue(redis.Redis.from_url(sys.argv[1]))\n"
        "StartedJobRegistry(queue=q).cleanup(time.time() + float(sys.argv[2]))\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, redis_url, str(after_s)], env=env, cwd=ROOT, check=True
    )


async def a_live_runs_call(redis: Any, host: str, model: str = "live") -> LLMTask:
    """A live run (``run-live``, active) with a call of ``model`` sent to ``host``, as
    the orchestrator sends it: its model is in use while the run is active."""
    live = LLMTask(
        kind="chat",
        task_id="run-live/c1/s1",
        run_id="run-live",
        backend="ollama",
        model=model,
        host=host,
        hosts=(host,),
        messages=(ChatMessage(role="user", content="Cycle 1 begins."),),
    )
    await redis.sadd(ACTIVE_RUNS, "run-live")
    await ask_for(redis, "run-live", live)
    await llm_task_stream(redis, live).send(live)
    return live
