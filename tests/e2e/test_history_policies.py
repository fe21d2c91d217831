"""History compaction end to end (issue 31): every service a process, the model the
Ollama stand-in (the real ``ollama`` client): the summaries are asked as logged tasks
through the LLM worker, every prompt stays under the budget, the run replays with every
prompt hash; a compaction model the host lacks is one line at `contreact run`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from contreact_events.config.history import DEFAULT_COMPACTION_PROMPT
from tests.support import fake_ollama
from tests.support.fake_ollama import FakeOllama, running_fake_ollama, text_answer
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

RULE = {"policy": "compact", "keep_last": 4, "threshold_messages": 10}


def write(tmp_path: Path, fake: FakeOllama, run_id: str, **more: Any) -> Path:
    path = tmp_path / f"{run_id}.yaml"
    data = {
        "run_id": run_id,
        "model_name": "llama3",
        "cycle_count": 10,
        "backend": "ollama",
        "ollama_client_config": {"host": fake.host},
        "diversity": {"enabled": False},
        **more,
    }
    path.write_text(yaml.safe_dump(data))
    return path


def summarising(body: dict[str, Any]) -> dict[str, Any]:
    """The stand-in's answers: a summary when asked for one, else the usual agent."""
    messages = body.get("messages") or []
    if messages and messages[0].get("content") == DEFAULT_COMPACTION_PROMPT:
        return text_answer(body, f"I wrote {messages[-1]['content'].count('called write')} notes.")
    return ORIGINAL(body)


ORIGINAL = fake_ollama.auto_answer


def test_a_compacted_run_through_every_service(
    stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fake_ollama, "auto_answer", summarising)
    with running_fake_ollama(models=["llama3:latest"]) as fake:
        fake.auto_reply = True
        stack.cli("run", str(write(tmp_path, fake, "hc-1", history=RULE)), check=True)
        chats = fake.chat_requests()
        refused = stack.cli(
            "run", str(write(tmp_path, fake, "hc-2", history={**RULE, "model": "qwen3:4b"}))
        )
    state = stack.json("show", "hc-1")
    assert state["status"] == "completed" and state["compactions"] >= 2
    summaries = [c for c in chats if c["messages"][0]["content"] == DEFAULT_COMPACTION_PROMPT]
    assert len(summaries) == state["compactions"]
    assert all(not c.get("tools") for c in summaries)
    agent_calls = [c for c in chats if c not in summaries]
    assert max(len(c["messages"]) for c in agent_calls) <= 1 + 1 + 10 + 4
    assert state["summary"].startswith("I wrote")
    assert stack.json("replay", "hc-1", "--check")["divergence"] is None
    assert stack.json("rebuild", "hc-1")["equal"] is True
    assert stack.json("memory-rebuild", "hc-1")["identical"] is True
    # A compaction model the host does not have: one line, nothing submitted.
    assert refused.returncode == 2, refused.stdout + refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert "history.model qwen3:4b cannot summarise" in line and "ollama pull qwen3:4b" in line
    assert stack.cli("show", "hc-2").returncode == 2
