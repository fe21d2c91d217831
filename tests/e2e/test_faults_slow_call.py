"""Faults: an LLM call far longer than the reclaim time.

The fault suite, split over ``test_faults_*.py`` so that xdist spreads it (the common
parts are in ``tests/support/faults.py``): every service a real process under
`contreact up`'s supervisor, on a real Redis, broken on purpose while runs go on.
Afterwards every run has exactly its cycle count or a failure with a stated reason,
every log folds and replays, the orchestrator's final state equals the rebuilt one,
and no memory effect was applied twice. Nobody runs `contreact up` again after a
fault: the platform recovers alone."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from tests.support.fake_ollama import running_fake_ollama
from tests.support.faults import QUICK_RECLAIM
from tests.support.stack import running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_150_second_llm_call_runs_exactly_once(redis_url: str, tmp_path: Path) -> None:
    """Far longer than the reclaim time (3 s here), with a second worker waiting: the
    worker keeps its claim fresh, so the call is made once and its answer taken."""
    with running_fake_ollama(["slow-70b"]) as fake:
        fake.reply("After a long think: I am here.", delay_s=150)
        config = tmp_path / "slow.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "run_id": "slow-call",
                    "model_name": "slow-70b",
                    "cycle_count": 1,
                    "backend": "ollama",
                    "ollama_client_config": {"host": fake.host},
                    "diversity": {"enabled": False},
                }
            )
        )
        with running_stack(tmp_path, redis_url, "--llm-workers", "2", env=QUICK_RECLAIM) as stack:
            started = time.monotonic()
            run = stack.cli("run", str(config), timeout=400)
            assert run.returncode == 0, run.stdout + run.stderr
            assert time.monotonic() - started >= 150
            show = stack.json("show", "slow-call")
        assert len(fake.chat_requests()) == 1
        assert show["reflection_history"] == ["After a long think: I am here."]
        assert show["cycle_metrics"][0]["llm_calls"] == 1
