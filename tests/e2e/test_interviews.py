"""Interviews end to end (issue 31): `contreact ask` and `contreact query` as users run
them, every service a process, the model the Ollama stand-in on a real socket (the real
``ollama`` client speaks to it), on a finished run and on the same run once only its
archive holds it; every bad input one line."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from contreact_events.core.researcher import researcher_turn
from contreact_events.names import run_log_key, run_meta_key, run_queries_key
from tests.support.fake_ollama import FakeOllama, running_fake_ollama
from tests.support.faults import archived
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

QUESTION = "Which of your notes matters most to you, and why?"


def one_line(proc: Any, *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("contreact: error: "), line
    for needle in needles:
        assert needle in line, line


def start_run(stack: Stack, tmp_path: Path, fake: FakeOllama, run_id: str) -> None:
    config = {
        "run_id": run_id,
        "model_name": "llama3",
        "cycle_count": 3,
        "backend": "ollama",
        "ollama_client_config": {"host": fake.host},
        "diversity": {"enabled": False},
    }
    path = tmp_path / f"{run_id}.yaml"
    path.write_text(yaml.safe_dump(config))
    stack.cli("run", str(path), check=True)


def checks_pass(stack: Stack, run_id: str) -> None:
    """rebuild equals live, replay --check passes (every prompt hash), memory-rebuild."""
    assert stack.json("rebuild", run_id)["equal"] is True
    assert stack.json("replay", run_id, "--check")["divergence"] is None
    assert stack.json("memory-rebuild", run_id)["identical"] is True


def test_query_and_ask_a_finished_and_an_archived_run(stack: Stack, tmp_path: Path) -> None:
    with running_fake_ollama(models=["llama3:latest"]) as fake:
        fake.auto_reply = True
        start_run(stack, tmp_path, fake, "iv-1")
        stack.wait_until(lambda: archived(stack.redis_url, ["iv-1"]) == {"iv-1"}, what="archive")
        seen = stack.json("show", "iv-1")
        before = len(fake.chat_requests())

        # query: the history as the agent last saw it, then the question; no tools.
        fake.reply("My note of cycle 3: it is the newest.")
        asked = stack.cli("query", "iv-1", QUESTION, "--by", "tester", "--json", check=True)
        record = json.loads(asked.stdout)
        chats = fake.chat_requests()[before:]
        assert len(chats) == 1
        sent = chats[0]
        assert not sent.get("tools")
        assert sent["messages"][-1] == {"role": "user", "content": QUESTION}
        last_call = fake.chat_requests()[before - 1]  # the agent's own last call
        assert sent["messages"][: len(last_call["messages"])] == last_call["messages"]
        assert sent["messages"][len(last_call["messages"])]["role"] == "assistant"
        assert record["answer"] == "My note of cycle 3: it is the newest."
        assert record["by"] == "tester" and record["cycle"] == 3
        # Beside the run, never in its log: the log, its digest and its checks unchanged.
        assert stack.json("show", "iv-1") == seen
        checks_pass(stack, "iv-1")
        lines = (stack.data_dir / "runs" / "iv-1.queries.jsonl").read_text().splitlines()
        assert [json.loads(line)["input_sha256"] for line in lines] == [record["input_sha256"]]
        client = redis.Redis.from_url(stack.redis_url)
        assert client.xlen(run_queries_key("iv-1")) == 1

        # ask: a fork at the last cycle whose one cycle opens with the question.
        before = len(fake.chat_requests())
        ask = stack.cli("ask", "iv-1", QUESTION, check=True)
        assert "run iv-1-c3-ask asked from iv-1 at cycle 3" in ask.stdout
        assert "run iv-1-c3-ask completed: 4 cycle(s)" in ask.stdout
        first = fake.chat_requests()[before]
        assert first["messages"][-1] == {"role": "user", "content": researcher_turn(QUESTION)}
        assert stack.json("show", "iv-1") == seen  # the parent never changes
        checks_pass(stack, "iv-1-c3-ask")
        stack.cli("export", "iv-1-c3-ask", "--out", str(tmp_path / "x"), check=True)
        rows = [json.loads(line) for line in (tmp_path / "x" / "iv-1-c3-ask.jsonl").open()]
        marked = [
            (r["cycle_number"], r["payload"]["researcher_question"])
            for r in rows
            if r["event_type"] == "CYCLE_START" and "researcher_question" in r["payload"]
        ]
        assert marked == [(4, QUESTION)]

        # Once only its archive holds the run (its Redis keys expired), both still work.
        client.delete(run_log_key("iv-1"), run_meta_key("iv-1"))
        fake.reply("Still the newest note.")
        again = stack.cli("query", "iv-1", "And now?", "--json", check=True)
        assert json.loads(again.stdout)["run_events"] == record["run_events"]
        stack.cli("ask", "iv-1", "One more?", "--at-cycle", "2", "--run-id", "iv-1-b", check=True)
        assert stack.json("show", "iv-1-b")["status"] == "completed"
        assert len(stack.json("queries", "iv-1")) == 2
        # The dashboard shows both: the queries on the run's page, the interview's question.
        base = f"http://127.0.0.1:{stack.env['CONTREACT_UI_PORT']}"

        def page(path: str) -> dict[str, Any]:
            try:
                with urllib.request.urlopen(f"{base}{path}", timeout=60) as response:
                    return dict(json.loads(response.read()))
            except urllib.error.HTTPError:  # (not projected yet)
                return {"queries": []}

        stack.wait_until(
            lambda: len(page("/runs/iv-1.json").get("queries", [])) == 2, what="queries"
        )
        assert page("/runs/iv-1.json")["queries"][0]["question"] == QUESTION
        stack.wait_until(
            lambda: (
                (page("/runs/iv-1-c3-ask.json").get("fork_of") or {}).get("question") == QUESTION
            ),
            what="the interview on the dashboard",
        )

        # Bad input: one clear line each.
        one_line(stack.cli("query", "nobody", QUESTION), "nobody")
        one_line(stack.cli("ask", "nobody", QUESTION), "nobody")
        one_line(stack.cli("query", "iv-1", "x" * 4001), "over the cap of 4000")
        one_line(stack.cli("ask", "iv-1", "x" * 4001), "over the cap of 4000")
        one_line(stack.cli("query", "iv-1", "q", "--model", "qwen3:4b"), "qwen3:4b", "pull")
