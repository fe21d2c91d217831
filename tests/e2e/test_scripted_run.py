"""End to end: a 10-cycle scripted run through every service as a separate process,
with tool calls and an operator exchange; then rebuild, replay and export."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from contreact_events.core.state import AgentState
from contreact_events.history.run_summary import RunListing, run_summary
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

CYCLES = 10


def call(name: str, **arguments: str) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def script() -> list[dict[str, Any]]:
    replies: list[dict[str, Any]] = [
        {
            "content": "",
            "tool_calls": [
                call("write", key="goal", value="map my own habits"),
                call("send_message_to_operator", message="Is anyone there?"),
            ],
        },
        {"content": "", "tool_calls": [call("teleport", where="moon")]},
        {"content": "Cycle 1: I set a goal and asked the operator."},
    ]
    for cycle in range(2, CYCLES + 1):
        replies += [
            {
                "content": "",
                "tool_calls": [
                    call("write", key=f"note-{cycle}", value=f"thoughts of cycle {cycle}"),
                    call("list"),
                ],
            },
            {
                "content": "",
                "tool_calls": [
                    call("read", key=f"note-{cycle}"),
                    call("pattern_search", pattern="note-"),
                ],
            },
            {"content": f"Cycle {cycle}: I kept notes and read them back."},
        ]
    return replies


def write_config(tmp_path: Path, run_id: str, **extra: Any) -> Path:
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script()))
    config = {
        "run_id": run_id,
        "model_name": "scripted-model",
        "cycle_count": CYCLES,
        "backend": "scripted",
        "script": "script.yaml",
        "operator": {"mode": "human"},
        "model_options": {"seed": 7, "temperature": 0.2},
        **extra,
    }
    path = tmp_path / f"{run_id}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def status_of(stack: Stack, run_id: str) -> str:
    rows = {row["run_id"]: row for row in stack.json("runs")}
    return str(rows.get(run_id, {}).get("status", ""))


def test_a_ten_cycle_scripted_run_end_to_end(stack: Stack, tmp_path: Path) -> None:
    run_id = "e2e-scripted"
    follower = stack.start("run", str(write_config(tmp_path, run_id)))
    stack.wait_until(lambda: status_of(stack, run_id) == "waiting_operator", what="operator wait")
    replied = stack.cli("reply", run_id, "Yes, I am here.", check=True)
    assert "reply delivered" in replied.stdout
    out, err = follower.communicate(timeout=240)
    assert follower.returncode == 0, out + err
    assert f"cycle {CYCLES}/{CYCLES}" in out
    assert "agent -> operator: Is anyone there?" in out
    assert "operator -> agent: Yes, I am here." in out
    assert "unknown tool 'teleport'" in out
    assert f"run {run_id} completed: {CYCLES} cycle(s)" in out

    show = stack.json("show", run_id)
    assert show["status"] == "completed" and len(show["reflection_history"]) == CYCLES

    rebuild = stack.json("rebuild", run_id)
    assert rebuild["equal"] is True, rebuild
    replay = stack.json("replay", run_id, "--check")
    assert replay["divergence"] is None and replay["inputs"] > CYCLES * 3

    stack.cli("export", run_id, "--out", str(tmp_path / "logs"), check=True)
    records = [json.loads(line) for line in (tmp_path / "logs" / f"{run_id}.jsonl").open()]
    kinds = [r["event_type"] for r in records]
    assert kinds.count("CYCLE_START") == CYCLES and kinds.count("CYCLE_END") == CYCLES
    assert kinds.count("LLM_INVOCATION") == 3 * CYCLES
    tool_calls = [r["payload"] for r in records if r["event_type"] == "TOOL_CALL"]
    operator = [t for t in tool_calls if t["tool_name"] == "send_message_to_operator"]
    assert operator == [
        {
            "tool_name": "send_message_to_operator",
            "parameters": {"message": "Is anyone there?"},
            "output": "Yes, I am here.",
            "ok": True,
        }
    ]
    reads = [t for t in tool_calls if t["tool_name"] == "read"]
    assert [t["output"] for t in reads] == [f"thoughts of cycle {c}" for c in range(2, CYCLES + 1)]
    ends = [r["payload"] for r in records if r["event_type"] == "CYCLE_END"]
    assert ends[0]["metrics"]["messages_to_operator"] == 1
    assert ends[0]["metrics"]["tool_errors"] == 1
    assert all(e["metrics"]["memory_ops_total"] == 4 for e in ends[1:])
    assert ends[-1]["final_reflection"] == f"Cycle {CYCLES}: I kept notes and read them back."
    last_prompt = [r for r in records if r["event_type"] == "LLM_INVOCATION"][-1]
    assert last_prompt["payload"]["prompt_messages"][0]["role"] == "system"
    assert last_prompt["payload"]["model_options"] == {"seed": 7, "temperature": 0.2}

    memory = stack.json("memory-rebuild", run_id)
    assert memory["identical"] is True, memory

    # The archive alone serves a finished run once Redis forgets it.
    assert (stack.data_dir / "runs" / f"{run_id}.events.jsonl").exists()
    forget = redis.Redis.from_url(stack.env["REDIS_URL"])
    assert forget.delete(f"run:{{{run_id}}}") == 1
    forget.close()
    assert stack.json("replay", run_id, "--check")["divergence"] is None
    assert stack.json("rebuild", run_id)["equal"] is True  # the final digest is kept
    # What if the policy had answered? The person's recorded reply is not reused.
    what_if = stack.cli("replay", run_id, "--what-if", "operator.mode=auto", "--json")
    assert what_if.returncode == 1, what_if.stdout + what_if.stderr
    divergence = json.loads(what_if.stdout)["divergence"]
    assert (divergence["cycle"], divergence["kind"]) == (1, "recorded_waited")
    assert divergence["recorded"]["text"] == "Yes, I am here."
    unchanged = stack.cli("replay", run_id, "--what-if", "max_steps_per_cycle=3")
    assert unchanged.returncode == 0 and "nothing changes" in unchanged.stdout
    again = tmp_path / "again"
    stack.cli("export", run_id, "--out", str(again), check=True)
    assert (again / f"{run_id}.jsonl").read_text() == (
        tmp_path / "logs" / f"{run_id}.jsonl"
    ).read_text()


def test_the_cli_and_the_dashboard_give_one_document_for_a_run(stack: Stack) -> None:
    """One contract per concept (issue 28): ``contreact runs --json`` prints a run's
    ``RunListing`` and the dashboard's ``/runs.json`` row is its ``RunSummary`` plus what
    only the dashboard keeps; for the same run the fields they share are the same names
    with the same values, and the summary's figures are those of the run's fold."""
    run_id = "e2e-scripted"  # completed by the test above
    runs = stack.json("runs")
    listed = next((r for r in runs if r["run_id"] == run_id), None)
    assert listed is not None, [r["run_id"] for r in runs]
    assert set(listed) == set(RunListing.model_fields)
    base = f"http://127.0.0.1:{stack.env['CONTREACT_UI_PORT']}"

    def dashboard_row() -> dict[str, Any]:
        with urllib.request.urlopen(f"{base}/runs.json?q={run_id}", timeout=60) as response:
            rows = json.loads(response.read())["runs"]
        return next((r for r in rows if r["run_id"] == run_id), {})

    stack.wait_until(lambda: dashboard_row().get("status") == "completed", what="the dashboard")
    shown = dashboard_row()
    assert {name: shown[name] for name in listed} == listed
    state = AgentState.model_validate(stack.json("show", run_id))
    summary = run_summary(state).model_dump(mode="json")
    assert {name: shown[name] for name in summary} == summary


def test_the_run_survives_an_orchestrator_crash(stack: Stack, tmp_path: Path) -> None:
    run_id = "e2e-crash"
    follower = stack.start("run", str(write_config(tmp_path, run_id, operator={"mode": "auto"})))
    stack.wait_until(
        lambda: status_of(stack, run_id) in ("running", "completed"), what="the run to start"
    )
    pid = stack.pid_of("orchestrator")
    os.kill(pid, signal.SIGKILL)  # nobody runs `contreact up` again: the supervisor does
    out, err = follower.communicate(timeout=240)

    def orchestrator_row() -> dict[str, Any]:
        (row,) = [p for p in stack.json("status")["processes"] if p["process"] == "orchestrator"]
        return dict(row)

    # The run may have ended before the kill, so the follower can return while the
    # supervisor still waits out its restart backoff: wait for the new process.
    stack.wait_until(lambda: orchestrator_row()["alive"], what="the orchestrator restarted")
    row = orchestrator_row()
    assert row["restarts"] == 1 and row["alive"] and row["pid"] != pid
    assert row["last_exit"] == "signal 9"
    assert follower.returncode == 0, out + err
    assert stack.json("replay", run_id, "--check")["divergence"] is None
    assert stack.json("rebuild", run_id)["equal"] is True


def test_run_without_services_says_how_to_start_them(redis_url: str, tmp_path: Path) -> None:
    import os
    import sys

    env = {**os.environ, "REDIS_URL": redis_url, "CONTREACT_DATA_DIR": str(tmp_path)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "contreact_cli",
            "run",
            str(write_config(tmp_path, "x")),
            "--wait",
            "0.5",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "start them with `contreact up`" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.slow
def test_a_short_run_on_the_embedded_model(stack: Stack, tmp_path: Path) -> None:
    """The real Gemma 3 270M through every service: weak answers, real everything."""
    from tests.support.fake_ollama import closed_port_host

    path = tmp_path / "embedded.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "run_id": "e2e-embedded",
                "model_name": "gemma3:270m",
                "cycle_count": 2,
                "backend": "auto",
                "max_steps_per_cycle": 2,
                "ollama_client_config": {"host": closed_port_host()},
                "model_options": {"seed": 1, "num_predict": 32, "num_ctx": 2048},
            }
        )
    )
    proc = stack.cli("run", str(path), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "backend: embedded (auto: chose embedded" in proc.stdout
    assert "runs INSTEAD OF the configured gemma3:270m" in proc.stdout  # never silent
    show = stack.json("show", "e2e-embedded")
    assert show["backend"] == "embedded" and len(show["cycle_metrics"]) == 2
    ran = show["resolved_model"]
    assert ran and ran != "gemma3:270m"
    listed = {row["run_id"]: row for row in stack.json("runs")}["e2e-embedded"]
    assert (listed["backend"], listed["resolved_model"], listed["model"]) == (
        "embedded",
        ran,
        "gemma3:270m",
    )
    assert f"{ran} INSTEAD OF gemma3:270m (embedded" in stack.cli("show", "e2e-embedded").stdout
    assert all(m["completion_tokens"] > 0 for m in show["cycle_metrics"])
    # Whether the model stops calling tools or hits the cap (then it gets a last call
    # without tools), every cycle ends with a reflection it wrote: the demo shows one.
    assert all(text.strip() for text in show["reflection_history"]), show["reflection_history"]
    assert show["model_digest"].startswith("sha256:")
    assert stack.json("replay", "e2e-embedded", "--check")["divergence"] is None
    assert stack.json("rebuild", "e2e-embedded")["equal"] is True
