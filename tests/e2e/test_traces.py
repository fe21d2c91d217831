"""End to end (issue 33): the stack started with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set to
a real Phoenix (``phoenix serve``, installed from PyPI by ``deploy/otel-receiver.sh``)
and message capture switched on; two scripted runs; Phoenix's own REST API then holds
one trace per run, its spans named and attributed by the GenAI conventions."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from contreact_events.history.trace_spans import span_id_of, trace_id_of
from tests.support.phoenix import Phoenix, running_phoenix
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

CYCLES = 3
RUNS = ("e2e-traced-1", "e2e-traced-2")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    with running_phoenix(tmp_path_factory.mktemp("phoenix")) as running:
        yield running


@pytest.fixture(scope="module")
def stack_env(phoenix: Phoenix) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url,
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    }


def script(ask: bool = False) -> list[dict[str, Any]]:
    """Each cycle a write and a list, then its reflection; with ``ask``, the first
    cycle also asks the operator (the run then waits on a person's reply)."""
    replies: list[dict[str, Any]] = []
    if ask:
        message = {"name": "send_message_to_operator", "arguments": {"message": "Anyone?"}}
        replies.append({"content": "", "tool_calls": [message]})
    for cycle in range(1, CYCLES + 1):
        write = {"name": "write", "arguments": {"key": f"k{cycle}", "value": f"note {cycle}"}}
        replies += [
            {"content": "", "tool_calls": [write, {"name": "list", "arguments": {}}]},
            {"content": f"Cycle {cycle}: a note kept."},
        ]
    return replies


def write_config(tmp_path: Path, run_id: str, *, ask: bool = False) -> Path:
    (tmp_path / f"{run_id}.script.yaml").write_text(yaml.safe_dump(script(ask)))
    config = {
        "run_id": run_id,
        "model_name": "scripted-model",
        "cycle_count": CYCLES,
        "backend": "scripted",
        "script": f"{run_id}.script.yaml",
        "operator": {"mode": "human" if ask else "auto"},
        "diversity": {"enabled": False},
    }
    path = tmp_path / f"{run_id}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_each_run_is_one_trace_in_phoenix(stack: Stack, phoenix: Phoenix, tmp_path: Path) -> None:
    for run_id in RUNS:
        done = stack.cli("run", str(write_config(tmp_path, run_id)), check=True, timeout=300)
        assert f"run {run_id} completed" in done.stdout

    def ours() -> list[dict[str, Any]]:
        spans = phoenix.spans()
        return [s for s in spans if s["attributes"].get("gen_ai.conversation.id") in RUNS]

    per_run = 1 + CYCLES * (1 + 2 + 2 + 2)  # run, cycles, chats, tools, memory operations
    stack.wait_until(lambda: len(ours()) == per_run * len(RUNS), 120, "the spans in Phoenix")
    spans = ours()
    traces = Counter(s["context"]["trace_id"] for s in spans)
    assert traces == {f"{trace_id_of(run_id):032x}": per_run for run_id in RUNS}
    for run_id in RUNS:
        mine = [s for s in spans if s["attributes"]["gen_ai.conversation.id"] == run_id]
        (root,) = [s for s in mine if s["parent_id"] is None]
        assert root["name"] == "invoke_agent contreact"
        assert root["context"]["span_id"] == f"{span_id_of(run_id, 'run'):016x}"
        assert root["status_code"] == "OK"
        names = Counter(s["name"] for s in mine)
        assert names["chat scripted-model"] == 2 * CYCLES
        assert names["execute_tool write"] == names["execute_tool list"] == CYCLES
        assert names["upsert_memory"] == names["search_memory"] == CYCLES
        by_id = {s["context"]["span_id"]: s for s in mine}
        chats = [s for s in mine if s["name"] == "chat scripted-model"]
        for chat in chats:
            assert by_id[chat["parent_id"]]["name"].startswith("cycle ")
            attributes = chat["attributes"]
            assert attributes["gen_ai.operation.name"] == "chat"
            assert attributes["gen_ai.provider.name"] == "scripted"
            assert attributes["gen_ai.request.model"] == "scripted-model"
            assert attributes["gen_ai.response.model"]
            assert attributes["gen_ai.usage.input_tokens"] > 0
            assert attributes["gen_ai.response.finish_reasons"] == ["stop"]
        outputs = " ".join(str(s["attributes"].get("gen_ai.output.messages")) for s in chats)
        assert f"Cycle {CYCLES}: a note kept." in outputs  # capture is switched on
        writes = [s["attributes"] for s in mine if s["name"] == "execute_tool write"]
        assert {w["gen_ai.tool.name"] for w in writes} == {"write"}
        arguments = sorted(
            (json.loads(w["gen_ai.tool.call.arguments"]) for w in writes), key=lambda a: a["key"]
        )
        assert arguments == [{"key": f"k{c}", "value": f"note {c}"} for c in range(1, CYCLES + 1)]


def test_a_run_is_one_trace_across_an_orchestrator_crash(
    stack: Stack, phoenix: Phoenix, tmp_path: Path
) -> None:
    """The run waits on the operator in cycle 1; the orchestrator is killed (SIGKILL) and
    the supervisor starts another; the reply comes; the run ends. Its spans, given by
    both processes, are one trace: one root from the request to the end, each cycle
    once, the cycle open across the crash with its recorded start."""
    run_id = "e2e-traced-crash"
    follower = stack.start("run", str(write_config(tmp_path, run_id, ask=True)))

    def status() -> str:
        rows = {row["run_id"]: row for row in stack.json("runs")}
        return str(rows.get(run_id, {}).get("status", ""))

    def mine() -> list[dict[str, Any]]:
        spans = phoenix.spans()
        return [s for s in spans if s["attributes"].get("gen_ai.conversation.id") == run_id]

    stack.wait_until(lambda: status() == "waiting_operator", what="the operator wait")
    # The spans ended so far leave with the processor's next batch (5 s); a crash
    # before it would lose them (the run log keeps everything): wait for them.
    stack.wait_until(lambda: len(mine()) >= 1, 60, "the first chat span in Phoenix")
    pid = stack.pid_of("orchestrator")
    os.kill(pid, signal.SIGKILL)

    def restarted() -> bool:
        rows = stack.json("status")["processes"]
        (row,) = [r for r in rows if r["process"] == "orchestrator"]
        return bool(row["alive"]) and row["pid"] != pid

    stack.wait_until(restarted, 120, "the orchestrator restarted")
    stack.cli("reply", run_id, "Yes.", check=True)
    out, err = follower.communicate(timeout=300)
    assert follower.returncode == 0, out + err

    per_run = 1 + CYCLES * 7 + 2  # as above, and the question: its chat and tool call
    stack.wait_until(lambda: len(mine()) == per_run, 120, "the run's spans in Phoenix")
    spans = mine()
    assert {s["context"]["trace_id"] for s in spans} == {f"{trace_id_of(run_id):032x}"}
    names = Counter(s["name"] for s in spans)
    assert names["invoke_agent contreact"] == 1
    assert [names[f"cycle {c}"] for c in range(1, CYCLES + 1)] == [1] * CYCLES
    assert names["execute_tool send_message_to_operator"] == 1
    assert len({s["context"]["span_id"] for s in spans}) == len(spans)
    events = stack.json("show", run_id)
    assert events["status"] == "completed"
    (root,) = [s for s in spans if s["parent_id"] is None]
    (cycle_1,) = [s for s in spans if s["name"] == "cycle 1"]
    chats = [start(s) for s in spans if s["name"].startswith("chat ")]
    assert start(root) <= start(cycle_1) <= min(chats)  # opened before the crash
    assert cycle_1["parent_id"] == root["context"]["span_id"]


def start(span: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(span["start_time"])
