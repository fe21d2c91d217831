"""Pausing one model's runs of an experiment, and querying a live run, end to end (issue
31), every service a process under `contreact up`'s supervisor with its own Redis, the
models the Ollama stand-in on a real socket: `contreact pause --experiment EXP --model
M` rests M's runs while the other model's go on; every listing says `paused`; the rest
holds through a restart of every service and of Redis; `contreact query` of the paused
run (live, not ended) answers beside it, its log unchanged, its input hash rebuilt from
the log; a query of a run still running leaves it to run on exactly; `contreact resume
--experiment EXP --model M` lets M's runs finish, and every run replays exactly."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from contreact_events.catalog.query import RunQueried
from contreact_events.history.interview import query_problem
from contreact_events.names import run_log_key, run_queries_key
from tests.support.fake_ollama import FakeOllama, auto_answer, running_fake_ollama, text_answer
from tests.support.faults import QUICK_RECLAIM, answers, events_anywhere, live_events
from tests.support.stack import Stack, running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PAUSED = "px-paused-A"  # llama3's run
GOING = "px-going-A"  # mistral's run
QUESTION = "What are you in the middle of?"


def experiment(tmp_path: Path, fake: FakeOllama) -> Path:
    data = {
        "experiment": "px",
        "replicas": 1,
        "cycle_count": 8,
        "backend": "ollama",
        "ollama_client_config": {"host": fake.host},
        "diversity": {"enabled": False},
        "models": [
            {"label": "paused", "model_name": "llama3"},
            {"label": "going", "model_name": "mistral"},
        ],
    }
    path = tmp_path / "px.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The agent's calls (with tools) as the stand-in's automatic agent; a query (no
    tools) in words that name the model asked."""
    if body.get("tools"):
        return auto_answer(body)
    return text_answer(body, f"{body['model']}: writing my notes, one a cycle.")


def agent_calls(fake: FakeOllama, model: str) -> int:
    return sum(
        1 for r in fake.chat_requests() if r.get("tools") and str(r["model"]).startswith(model)
    )


def show(stack: Stack, run_id: str) -> dict[str, Any]:
    return dict(stack.json("show", run_id))


def resting(stack: Stack, run_id: str) -> bool:
    state = show(stack, run_id)
    return state["pending_task_id"] is None and state["phase"] in ("calling", "cycle_end")


def listed(stack: Stack) -> dict[str, tuple[str, str]]:
    """Each run's status as `contreact runs --json` (the Redis listing hash) and
    `experiment status --json` (folded from the log) list it, read one after the other."""
    runs = {r["run_id"]: r["status"] for r in stack.json("runs")}
    table = {r["run_id"]: r["status"] for r in stack.json("experiment", "status", "px")}
    return {run_id: (runs[run_id], status) for run_id, status in table.items()}


def both(status: str) -> tuple[str, str]:
    return (status, status)


def dashboard_status(stack: Stack, run_id: str) -> str | None:
    url = f"http://127.0.0.1:{stack.env['CONTREACT_UI_PORT']}/runs/{run_id}.json"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return str(json.loads(response.read())["run"]["status"])
    except (urllib.error.URLError, OSError):  # (not projected yet, or the UI restarting)
        return None


def raw_log(url: str, run_id: str) -> list[Any]:
    client = redis.Redis.from_url(url)
    try:
        return list(client.xrange(run_log_key(run_id)) or [])
    finally:
        client.close()


def test_one_models_runs_rest_through_restarts_and_a_live_run_is_queried(
    tmp_path: Path,
) -> None:
    with (
        running_fake_ollama(models=["llama3:latest", "mistral:latest"]) as fake,
        running_stack(tmp_path, None, env=QUICK_RECLAIM) as stack,
    ):
        fake.answer_with = answer
        fake.auto_reply = True
        fake.latency_s = 1.5  # (slow models: both runs are live when one is paused)
        stack.cli("experiment", "run", str(experiment(tmp_path, fake)), "--detach", check=True)

        def in_cycle_2() -> bool:  # (cycle 1 answered: both runs can be queried)
            cycles = {r["run_id"]: r["cycle"] for r in stack.json("runs")}
            return bool(min(cycles.get(PAUSED, 0), cycles.get(GOING, 0)) >= 2)

        stack.wait_until(in_cycle_2, 120, "both runs in cycle 2")

        paused = stack.cli(
            "pause", "--experiment", "px", "--model", "llama3", "--reason", "a look", check=True
        )
        assert f"run {PAUSED} paused" in paused.stdout and GOING not in paused.stdout
        # A query of the run still running: answered beside it while it goes on.
        assert show(stack, GOING)["status"] == "running"
        going = stack.cli("query", GOING, QUESTION, "--by", "ana", "--json", check=True)
        going_record = RunQueried.model_validate(json.loads(going.stdout))
        assert going_record.answer == "mistral: writing my notes, one a cycle."

        stack.wait_until(lambda: resting(stack, PAUSED), 60, "llama3's run to rest")
        stack.wait_until(lambda: listed(stack)[PAUSED] == both("paused"), 30, "listed paused")
        stack.wait_until(lambda: dashboard_status(stack, PAUSED) == "paused", 60, "dashboard")
        assert show(stack, PAUSED)["status"] == "running"  # the fold's own status
        rested_calls = agent_calls(fake, "llama3")

        # The other model's run goes on to its end while llama3's rests.
        stack.wait_until(lambda: show(stack, GOING)["status"] == "completed", 180, "mistral")
        assert agent_calls(fake, "llama3") == rested_calls
        stack.wait_until(
            lambda: listed(stack) == {PAUSED: both("paused"), GOING: both("completed")},
            30,
            "listed: one paused, one completed",
        )

        # Every service, then Redis, killed (the supervisor restarts each; Redis reads its
        # append-only file back): the rest is in the log, nothing is sent meanwhile.
        rows = stack.json("status")["processes"]
        services = [r for r in rows if r["process"] not in ("redis", "supervisor") and r["alive"]]
        assert {r["process"] for r in services} >= {"orchestrator", "llm-worker", "memory", "ui"}
        for row in services:
            os.kill(int(row["pid"]), signal.SIGKILL)
        os.kill(stack.pid_of("redis"), signal.SIGKILL)
        stack.wait_until(lambda: answers(stack.redis_url), 60, "Redis back")

        def every_service_back() -> bool:
            now = {r["process"]: r for r in stack.json("status")["processes"]}
            return all(
                now[r["process"]]["alive"] and now[r["process"]]["pid"] != r["pid"]
                for r in services
            )

        stack.wait_until(every_service_back, 180, "every service restarted")
        stack.wait_until(lambda: resting(stack, PAUSED), 60, "the run read back")
        time.sleep(6)  # (longer than a lease and a reclaim: a stale task would be sent by now)
        assert agent_calls(fake, "llama3") == rested_calls
        assert show(stack, PAUSED)["paused"] is True
        assert listed(stack)[PAUSED] == both("paused")
        stack.wait_until(lambda: dashboard_status(stack, PAUSED) == "paused", 120, "dashboard")

        # A query of the paused run (live, not ended): read only, recorded beside it.
        before = raw_log(stack.redis_url, PAUSED)
        asked = stack.cli("query", PAUSED, QUESTION, "--by", "ana", "--json", check=True)
        record = RunQueried.model_validate(json.loads(asked.stdout))
        assert raw_log(stack.redis_url, PAUSED) == before  # the log unchanged by it
        assert record.answer == "llama3: writing my notes, one a cycle."
        assert record.by == "ana"
        events = asyncio.run(live_events(stack.redis_url, PAUSED))
        answered = [i for i, e in enumerate(events) if e.type == "LLMResponded"]
        assert record.run_events == answered[-1] + 1  # up to the agent's last answer
        assert query_problem(events, record) is None  # its input hash, rebuilt from the log
        client = redis.Redis.from_url(stack.redis_url)
        assert client.xlen(run_queries_key(PAUSED)) == 1
        assert [r["input_sha256"] for r in stack.json("queries", PAUSED)] == [record.input_sha256]
        client.close()
        assert agent_calls(fake, "llama3") == rested_calls  # a query is no step of the run

        resumed = stack.cli(
            "resume", "--experiment", "px", "--model", "llama3", check=True, timeout=120
        )
        assert f"run {PAUSED} resumed" in resumed.stdout
        stack.wait_until(lambda: show(stack, PAUSED)["status"] == "completed", 180, "the end")
        stack.wait_until(
            lambda: listed(stack) == {PAUSED: both("completed"), GOING: both("completed")},
            30,
            "listed: both completed",
        )
        for run_id in (PAUSED, GOING):
            assert show(stack, run_id)["cycle_number"] == 8
            assert stack.json("replay", run_id, "--check")["divergence"] is None
            assert stack.json("rebuild", run_id)["equal"] is True
        # The query of the running run: its input still rebuilt from the (now whole) log.
        going_log = asyncio.run(events_anywhere(stack, stack.redis_url, GOING))
        assert query_problem(going_log, going_record) is None
        assert len(stack.json("queries", GOING)) == 1
