"""An exchange's analysis whose LLM worker is killed (issue 17): every service a real
process under `contreact up`'s supervisor, a run with ``cognition.analysis: model``
against an Ollama stand-in on a real socket (``tests/support/ollama_host.py``) whose
first analysis answer takes a minute. While that analysis is in flight the worker is
killed with SIGKILL; the supervisor starts a new one, which reclaims the analysis task
(its claim went silent) and sends it to the host again. The run completes after the
analysis, answered by the model, and its record is exact: the log folds and replays,
the rebuilt state equals the orchestrator's, memory rebuilds, export is stable."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from contreact_events.core.fold import fold_all
from tests.support.faults import (
    QUICK_RECLAIM,
    check_the_record,
    events_anywhere,
    submit_all,
    wait_for_the_end,
)
from tests.support.ollama_host import running_ollama_host
from tests.support.stack import running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MODEL = "thinker:7b"
CYCLES = 2
SLOW_ANALYSIS_S = 60.0
"""The first analysis' answer: far past the reclaim time (3 s), so the kill finds it
in flight and only a reclaim can answer it in time."""
ANALYSIS = {
    "intent": "request",
    "context_type": "new",
    "confidence": 0.9,
    "persistence_score": 0.3,
    "summary": "The operator tells the agent to go on.",
    "relevant_memories": [],
    "reasoning": "An instruction to continue.",
}


class AnalysisRequests:
    """The stand-in's latency per request, recording each analysis request (a body
    with a JSON ``format``) by its exchange: the first one answers slowly."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def latency(self, body: dict[str, Any]) -> float:
        if body.get("format") is None:
            return 0.05
        exchange = json.loads(body["messages"][-1]["content"])["exchange"]
        with self._lock:
            self.exchanges.append(exchange)
            return SLOW_ANALYSIS_S if len(self.exchanges) == 1 else 0.2


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """An analysis for a request with a JSON format; else a question to the operator
    after the cycle's user turn, and a reflection after the reply."""
    if body.get("format") is not None:
        return {"role": "assistant", "content": json.dumps(ANALYSIS)}
    messages = body.get("messages") or []
    cycle = sum(1 for m in messages if m.get("role") == "user")
    if messages and messages[-1].get("role") == "tool":
        return {"role": "assistant", "content": f"Cycle {cycle}: I asked and went on."}
    call = {"name": "send_message_to_operator", "arguments": {"message": f"Cycle {cycle}: on?"}}
    return {"role": "assistant", "content": "", "tool_calls": [{"function": call}]}


def test_an_analysis_whose_worker_is_killed_is_reclaimed_and_the_run_ends(
    redis_url: str, tmp_path: Path
) -> None:
    requests = AnalysisRequests()
    with running_ollama_host(
        [MODEL], num_parallel=4, answer=answer, request_latency_s=requests.latency
    ) as host:
        env = {
            **QUICK_RECLAIM,
            "CONTREACT_LLM_HOSTS": json.dumps({host.host: {"parallel": 4}}),
            "CONTREACT_LLM_LEASE_TTL_S": "5",
        }
        config = {
            "run_id": "killed-analysis",
            "model_name": MODEL,
            "cycle_count": CYCLES,
            "backend": "ollama",
            "ollama_client_config": {"host": host.host},
            "operator": {"mode": "auto"},
            "diversity": {"enabled": False},
            "cognition": {"analysis": "model", "deadline_s": 240},
        }
        with running_stack(tmp_path, redis_url, env=env) as stack:
            asyncio.run(submit_all(redis_url, [config]))
            stack.wait_until(lambda: requests.exchanges, what="the first analysis at the host")
            killed = stack.pid_of("llm-worker")
            os.kill(killed, signal.SIGKILL)
            wait_for_the_end(stack, redis_url, ["killed-analysis"], timeout=180)

            assert check_the_record(stack, redis_url, [config]) == {"killed-analysis": "completed"}
            rows = {row["process"]: row for row in stack.json("status")["processes"]}
            worker = rows["llm-worker"]
            assert worker["restarts"] >= 1 and worker["alive"] and worker["pid"] != killed

            events = asyncio.run(events_anywhere(stack, redis_url, "killed-analysis"))
            analysed = [e for e in events if e.type == "OperatorMessageAnalyzed"]
            assert sorted(e.task_id for e in analysed) == [
                f"killed-analysis/c{c}/s1/t0/analysis" for c in range(1, CYCLES + 1)
            ]
            # The killed call's analysis went to the host again (reclaimed, not expired:
            # its deadline is minutes away), and the model's answer was taken.
            first = requests.exchanges[0]
            assert requests.exchanges.count(first) == 2, requests.exchanges
            assert all(e.analysis.analyser == "model" for e in analysed), analysed
            assert all(e.fallback_reason is None for e in analysed)
            types = [e.type for e in events]
            assert "TaskRetried" not in types and "TaskFailed" not in types
            assert types[-1] == "RunCompleted"
            assert fold_all(events).open_tasks == ()

            assert stack.json("rebuild", "killed-analysis")["equal"] is True
            replay = stack.json("replay", "killed-analysis", "--check")
            assert replay["divergence"] is None and replay["events"] == len(events), replay
            first_export, second_export = tmp_path / "export-1", tmp_path / "export-2"
            for out in (first_export, second_export):
                stack.cli("export", "killed-analysis", "--out", str(out), check=True)
            exported = (first_export / "killed-analysis.jsonl").read_text()
            assert exported == (second_export / "killed-analysis.jsonl").read_text()
            kinds = [json.loads(line)["event_type"] for line in exported.splitlines()]
            assert kinds.count("CYCLE_END") == CYCLES
            assert kinds.count("LLM_INVOCATION") == 2 * CYCLES  # the run's calls only
