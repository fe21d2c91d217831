"""Runs for the dashboard's browser tests of long runs and defects, made by the pure
core (``Sim``) and written as archives: a 100- and a 1,000-cycle run, a failed one, one
still running, one whose model was substituted, one of empty reflections, one of
hostile text. ``ArchiveUI`` serves them with the real ``contreact-ui`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contreact_bus.archive import write_archive
from contreact_bus.local_redis import free_port
from contreact_events.catalog import Event
from contreact_events.catalog.chat import AssistantMessage, ToolCall
from contreact_events.wire.tasks import EmbedTask, LLMTask, MemoryTask
from tests.support import hostile
from tests.support.sim import Sim, make_config, say

LLM_SECONDS = 2.125
"""How long each simulated LLM call takes (milliseconds show on the event log)."""
TOOL_SECONDS = 0.25


class TimedSim(Sim):
    """A Sim whose clock moves as the services would take: LLM calls take
    ``LLM_SECONDS``, tool calls ``TOOL_SECONDS`` (Sim's own clock moves 1 s an input)."""

    def __init__(self, *args: Any, ran_model: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ran_model = ran_model

    def start(self) -> Any:
        if self.ran_model is None:
            return super().start()
        self.send("RunRequested", config=self.config.model_dump(mode="json"))
        check = self.task()
        return self.send(
            "ModelChecked",
            check.task_id,
            ok=True,
            backend="embedded",
            model=self.ran_model,
            detail="auto fell back to the embedded model",
        )

    def answer_llm(self, message: AssistantMessage, **usage: Any) -> Any:
        self._clock += LLM_SECONDS - 1  # type: ignore[assignment]
        return super().answer_llm(message, **usage)

    def answer_memory(self) -> Any:
        self._clock += TOOL_SECONDS - 1  # type: ignore[assignment]
        return super().answer_memory()


def paper_like(task: LLMTask) -> AssistantMessage:
    """Two or three LLM calls a cycle (so the calls axis has 2s and 3s), a memory write,
    a message to the operator every third cycle, then the reflection."""
    cycle, step = task.cycle, task.step
    if step == 1:
        return say("", ("write", {"key": f"note-{cycle}", "value": f"found in {cycle} " * 3}))
    if step == 2 and cycle % 3 == 0:
        return say("", ("send_message_to_operator", {"message": f"Cycle {cycle}: anyone?"}))
    return say(f"Cycle {cycle}: I wrote about topic {cycle % 7} and read it back. " * 3)


def run_log(
    run_id: str,
    cycles: int,
    *,
    reply: Callable[[LLMTask], AssistantMessage] = paper_like,
    ran_model: str | None = None,
    stop_after: int | None = None,
    fail_in: int | None = None,
    **config: Any,
) -> list[Event]:
    """A run of ``cycles`` cycles. ``stop_after``: only its first inputs (a run still
    running); ``fail_in``: the first LLM call of that cycle fails (a failed run)."""
    settings: dict[str, Any] = {
        "run_id": run_id,
        "cycle_count": cycles,
        "operator": {"mode": "auto"},
        "diversity": {"enabled": True},
        "model_name": "gemma3:270m" if ran_model else "scripted-model",
        "experiment": "dash",
    }
    settings.update(config)
    sim = TimedSim(make_config(**settings), ran_model=ran_model)

    sim.start()
    inputs = 0
    while sim.tasks and not sim.state.terminal:
        if stop_after is not None and inputs >= stop_after:
            break
        task = sim.tasks[0]
        if isinstance(task, MemoryTask):
            sim.answer_memory()
        elif isinstance(task, EmbedTask):
            sim.answer_embedding()
        elif isinstance(task, LLMTask) and task.cycle == fail_in:
            sim.send("LLMFailed", task.task_id, error="the model server went away", attempts=3)
        else:
            assert isinstance(task, LLMTask), task
            sim.answer_llm(reply(task), prompt_tokens=10, completion_tokens=5, wall_s=LLM_SECONDS)
        inputs += 1
    return sim.log


def hostile_log(run_id: str) -> list[Event]:
    replies = [
        AssistantMessage(
            content=r["content"].replace("{cycle}", "1"),
            tool_calls=tuple(ToolCall(**c) for c in r.get("tool_calls", ())),
        )
        for r in hostile.replies()
    ]
    config = make_config(run_id=run_id, cycle_count=2, diversity={"enabled": True})
    sim = TimedSim(config)
    sim.drive(replies)
    return sim.log


def write_runs(archive: Path, runs: dict[str, list[Event]]) -> None:
    for run_id, log in runs.items():
        write_archive(archive, run_id, log)


class ArchiveUI:
    """The real ``contreact-ui`` process over a data folder of archives (it rebuilds
    its projections from them when it starts)."""

    def __init__(self, data_dir: Path, redis_url: str) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "CONTREACT_UI_DATA_DIR": str(data_dir),
            "CONTREACT_UI_REDIS_URL": redis_url,
            "CONTREACT_UI_PORT": str(self.port),
        }
        self.log = (data_dir / "ui.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from contreact_ui.main import main; main()"],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    "contreact-ui exited: " + (self.data_dir / "ui.log").read_text()[-2000:]
                )
            try:
                with urllib.request.urlopen(self.base + "/health.json", timeout=5) as r:
                    if r.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        raise AssertionError("contreact-ui did not answer in time")

    def wait_projected(self, statuses: dict[str, str], timeout: float = 300.0) -> None:
        """Until every run is projected to its final status (the service answers before
        its follower has read the archives)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, _, body = self.get("/runs.json?limit=1000")
            if status == 200:
                found = {r["run_id"]: r["status"] for r in json.loads(body)["runs"]}
                if all(found.get(run_id) == want for run_id, want in statuses.items()):
                    return
            time.sleep(0.5)
        raise AssertionError(f"the runs were not projected in time: {statuses}")

    def get(
        self, path: str, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
        except urllib.error.HTTPError as error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
