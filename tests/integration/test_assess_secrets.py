"""No secret given as a host spreads: ``contreact assess --host http://user:PASSWORD@...``
is refused before anything is queued, as the same host in a config file is, and the
password then appears nowhere: not in Redis (every key), the archive folder, the
services' logs, the CLI's output or the dashboard's JSON (as the TLS test searches for
the Redis password). A host that is not an http(s) URL is refused at enqueue time too,
in one line each, with nothing queued."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from contreact_bus.archive import write_archive
from contreact_bus.assessments.queueing import queue
from contreact_bus.llm_routes import route_of
from contreact_cli.main import main
from contreact_events.config import parse_run_config
from contreact_events.exceptions import ConfigError
from contreact_events.names import run_assessment_index_key
from contreact_events.wire.tasks import LLMTask
from contreact_ui.app import create_app
from contreact_ui.projection.rebuild import rebuild
from contreact_ui.settings import UISettings
from tests.support.assessing import (
    assessor_env,
    finished_run,
    llm_worker,
    start_assessor,
    wait_process,
)

pytestmark = pytest.mark.redis

PASSWORD = "hunter2-Pa55word-7c1e"
USER = "alice-tok3n"


def every_value(client: redis.Redis) -> bytes:
    """Every key of Redis and everything it holds, as one byte string."""
    out = []
    for key in client.scan_iter(count=1000):
        out.append(key)
        kind = client.type(key)
        if kind == b"string":
            out.append(client.get(key) or b"")
        elif kind == b"hash":
            out += [b for pair in client.hgetall(key).items() for b in pair]
        elif kind == b"list":
            out += client.lrange(key, 0, -1)
        elif kind == b"set":
            out += list(client.smembers(key))
        elif kind == b"zset":
            out += client.zrange(key, 0, -1)
        elif kind == b"stream":
            for _id, fields in client.xrange(key):
                out += [b for pair in fields.items() for b in pair]
    return b"\n".join(out)


def everything_in(folder: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_a_host_with_credentials_or_not_a_url_is_refused_and_the_password_is_nowhere(
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(data))
    write_archive(data / "runs", "solo", finished_run("solo", "m", "Level 3"))
    caplog.set_level(logging.DEBUG)

    def assess(*args: str) -> tuple[int, str]:
        with pytest.raises(SystemExit) as exited:
            main(["assess", "solo", "--evaluator", "judge", *args])
        captured = capsys.readouterr()
        return int(exited.value.code or 0), (captured.out + captured.err).strip()

    secret_hosts = [
        f"http://{USER}:{PASSWORD}@127.0.0.1:11434",
        f"https://{USER}:{PASSWORD}@models.example.org/v1",
        f"http://{PASSWORD}@127.0.0.1:11434",
    ]
    said = []
    for host in secret_hosts:
        for backend in ("ollama", "openai"):
            code, text = assess("--backend", backend, "--host", host)
            assert code != 0 and "must not hold credentials" in text, text
            assert len(text.splitlines()) == 1
            said.append(text)
    for host, problem in [
        ("file:///etc/passwd", "not file"),
        ("javascript:alert(1)", "is not a URL"),
        ("not a url", "holds a space"),
        ("http://host\x1b[31m:11434", "holds a control character"),
        ("http://", "names no host"),
    ]:
        code, text = assess("--backend", "ollama", "--host", host)
        assert code != 0 and problem in text and "give an http(s) URL" in text, text
        assert len(text.splitlines()) == 1 and "\x1b" not in text
    config = tmp_path / "run.yaml"
    config.write_text("run_id: r\nmodel_name: m\n")
    with pytest.raises(SystemExit) as exited:  # every host flag: `models pull --host` too
        main(["models", "check", str(config), "--host", secret_hosts[0]])
    text = capsys.readouterr().err.strip()
    assert exited.value.code != 0 and "must not hold credentials" in text
    said.append(text)
    for model, problem in [("", "is empty"), ("judge\nrm -rf", "control character")]:
        with pytest.raises(SystemExit) as exited:
            main(["assess", "solo", "--evaluator", model, "--backend", "ollama"])
        text = capsys.readouterr().err.strip()
        assert exited.value.code != 0 and problem in text and len(text.splitlines()) == 1

    client = redis.Redis.from_url(redis_url)
    assert queue(client).count == 0  # nothing was queued
    assert not client.exists(run_assessment_index_key("solo"))

    with pytest.raises(ConfigError) as refused:  # as the same host in a config file is
        parse_run_config(
            {"run_id": "r", "model_name": "m", "ollama_client_config": {"host": secret_hosts[0]}}
        )
    said.append(str(refused.value))
    task = LLMTask(
        kind="chat", task_id="t", run_id="r", backend="ollama", model="m", host=secret_hosts[0]
    )
    with pytest.raises(ValueError, match="must not hold credentials") as unrouted:
        route_of(task)  # no route holds one either
    said.append(str(unrouted.value))

    async def serve() -> None:  # the services, as they would run beside
        async with llm_worker(redis_url):
            log = data / "assessor.log"
            assert await wait_process(start_assessor(assessor_env(redis_url, data), log=log)) == 0

    asyncio.run(serve())
    assert not asyncio.run(rebuild(data / "ui.db", None, data / "runs")).problems
    app = create_app(UISettings(data_dir=data, redis_url=redis_url, project=False))
    pages = []
    with TestClient(app) as dashboard:
        for path in ["/runs.json", "/runs/solo.json", "/assessments.json", "/compare.json"]:
            pages.append(dashboard.get(path).text)
        composed = dashboard.get(
            "/compose.json",
            params={"ollama_client_config.host": secret_hosts[0], "model_name": "m"},
        )
        assert "must not hold credentials" in composed.text
        pages.append(composed.text)

    secret = PASSWORD.encode()
    assert secret not in every_value(client)
    assert secret not in everything_in(data)  # the archives, the logs, the dashboard's db
    logged = [r.getMessage() for r in caplog.records if not r.name.startswith("httpx")]
    assert not any(PASSWORD in line for line in logged)  # the LLM worker's, the CLI's log
    assert not any(PASSWORD in text for text in said + pages)
    assert not any(USER in text for text in pages)
    client.close()
