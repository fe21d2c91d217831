"""What a new user meets first: `make demo` (configs/sample.yaml on the embedded
Gemma 3 270M through every service), then `make test` while the demo still runs."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.fake_ollama import closed_port_host
from tests.support.stack import running_stack
from tests.support.stack_env import DEFAULT_PORTS

pytestmark = [pytest.mark.e2e]

SAMPLE = Path(__file__).resolve().parents[2] / "configs" / "sample.yaml"


def archived_events(data_dir: Path, run_id: str) -> list[dict[str, Any]]:
    path = data_dir / "runs" / f"{run_id}.events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_the_demo_config_ends_every_cycle_on_a_reflection_the_model_wrote(
    tmp_path: Path, redis_server: str
) -> None:
    """configs/sample.yaml as `make demo` runs it (the Ollama host moved to a closed
    port, so `backend: auto` picks the embedded model even where an Ollama runs)."""
    config = yaml.safe_load(SAMPLE.read_text())
    config["run_id"] = "demo-e2e"
    config["ollama_client_config"] = {"host": closed_port_host()}
    path = tmp_path / "sample.yaml"
    path.write_text(yaml.safe_dump(config))
    with running_stack(tmp_path, None) as stack:
        started = time.monotonic()
        proc = stack.cli("run", str(path), timeout=900)
        took = time.monotonic() - started
        assert proc.returncode == 0, proc.stdout + proc.stderr
        events = archived_events(stack.data_dir, "demo-e2e")
    print(f"\nthe demo's {config['cycle_count']} cycles took {took:.0f}s")
    assert "backend: embedded" in proc.stdout
    reflections = [e for e in events if e["type"] == "ReflectionRecorded"]
    assert [e["cycle"] for e in reflections] == list(range(1, config["cycle_count"] + 1))
    for reflection in reflections:
        print(f"cycle {reflection['cycle']}: {reflection['text']!r}")
        assert reflection["text"].strip(), reflection
        assert reflection["complete"] is True
        # The text is the model's own answer, word for word: the last LLMResponded
        # before it (no text written for the model by the platform).
        before = events[: events.index(reflection)]
        answer = [e for e in before if e["type"] == "LLMResponded"][-1]
        assert answer["message"]["content"] == reflection["text"]
        assert not answer["message"].get("tool_calls")
        assert answer["usage"]["completion_tokens"] > 0


def test_a_test_stack_takes_none_of_the_demos_ports_files_or_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default_ports_taken: tuple[int, ...]
) -> None:
    """The user's shell as `make demo` leaves it: the default ports taken (the e2e
    session holds them), CONTREACT_* set for the user's own stack. A test stack still
    starts, on ports and in a data dir of its own, and leaves the user's files alone."""
    for port in default_ports_taken:
        with socket.socket() as probe, pytest.raises(OSError):
            probe.bind(("127.0.0.1", port))
    users = tmp_path / "users-demo"
    users.mkdir()
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(users))
    monkeypatch.setenv("CONTREACT_MEMORY_DB_PATH", str(users / "memory.db"))
    monkeypatch.setenv("CONTREACT_UI_PORT", str(DEFAULT_PORTS[0]))
    monkeypatch.setenv("CONTREACT_LOCAL_REDIS_PORT", str(DEFAULT_PORTS[1]))
    config = tmp_path / "one.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "run_id": "beside-the-demo",
                "model_name": "m",
                "cycle_count": 1,
                "backend": "scripted",
                "diversity": {"enabled": False},
                "script": {
                    "replies": [
                        {
                            "tool_calls": [
                                {"name": "write", "arguments": {"key": "k", "value": "v"}}
                            ]
                        },
                        {"content": "A note for the next cycle."},
                    ]
                },
            }
        )
    )
    (tmp_path / "test").mkdir()
    with running_stack(tmp_path / "test", None) as stack:
        ports = {int(stack.env["CONTREACT_UI_PORT"]), int(stack.env["CONTREACT_LOCAL_REDIS_PORT"])}
        assert not ports & set(DEFAULT_PORTS)
        run = stack.cli("run", str(config), timeout=180)
        assert run.returncode == 0, run.stdout + run.stderr
        url = f"http://127.0.0.1:{stack.env['CONTREACT_UI_PORT']}/health.json"
        with urllib.request.urlopen(url, timeout=10) as response:
            assert json.loads(response.read())["ok"] is True
        assert (stack.data_dir / "runs" / "beside-the-demo.events.jsonl").is_file()
    assert list(users.iterdir()) == []  # no pid file, log, archive or database of the test's
