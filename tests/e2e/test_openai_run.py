"""A run on the OpenAI-compatible backend through every service, against a stand-in
server: tool calls both ways, usage recorded, and the key nowhere but in the worker's
environment and the request headers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from tests.support.fake_openai import FakeOpenAI, running_fake_openai
from tests.support.stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

KEY = "sk-or-v1-e2e-7f3a9c1d5b-never-stored"
MODEL = "meta-llama/llama-3.3-70b-instruct"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai([MODEL], key=KEY) as server:
        yield server


@pytest.fixture(scope="module")
def stack_env() -> dict[str, str]:
    return {"E2E_ROUTER_KEY": KEY}


def everything_in_redis(url: str) -> bytes:
    """Every key's name and contents, read as its type (not DUMP: it may compress)."""
    client: Any = redis.Redis.from_url(url)  # replies are bytes (decode_responses off)
    out: list[bytes] = []
    try:
        for key in client.scan_iter(count=1000):
            out.append(key)
            kind = client.type(key)
            if kind == b"string":
                out.append(client.get(key) or b"")
            elif kind == b"hash":
                out += [k + b"=" + v for k, v in client.hgetall(key).items()]
            elif kind == b"stream":
                for _id, fields in client.xrange(key):
                    out += [k + b"=" + v for k, v in fields.items()]
            elif kind in (b"set", b"zset", b"list"):
                members = (
                    client.smembers(key)
                    if kind == b"set"
                    else client.zrange(key, 0, -1)
                    if kind == b"zset"
                    else client.lrange(key, 0, -1)
                )
                out += list(members)
    finally:
        client.close()
    return b"\n".join(out)


def test_an_openai_run_with_tools_and_the_key_kept_out_of_every_record(
    stack: Stack, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.reply("", [("write", {"key": "plan", "value": "look around"})], prompt_tokens=50)
    fake.reply("Cycle 1: I wrote a plan.", prompt_tokens=80, completion_tokens=9)
    fake.reply("", [("read", {"key": "plan"})])
    fake.reply("Cycle 2: I read it back.")
    config = {
        "run_id": "e2e-openai",
        "model_name": MODEL,
        "cycle_count": 2,
        "backend": "openai",
        "openai_client_config": {"base_url": fake.base_url, "api_key_env": "E2E_ROUTER_KEY"},
        "model_options": {"temperature": 0.2, "num_predict": 300, "num_ctx": 4096},
        "operator": {"mode": "auto"},
        "diversity": {"enabled": False},
    }
    path = tmp_path / "openai.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = stack.cli("run", str(path), timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"backend: openai (model '{MODEL}' is served by" in proc.stdout
    assert "not sent (set on the server): num_ctx" in proc.stdout

    requests = fake.chat_requests()
    assert len(requests) == 4
    assert {r.headers["authorization"] for r in fake.received} == {f"Bearer {KEY}"}
    assert requests[0]["max_tokens"] == 300 and "num_ctx" not in requests[0]
    # the read in cycle 2 went out after the write's result, matched by id
    history = requests[2]["messages"]
    call = next(m for m in history if m.get("tool_calls"))
    result = next(m for m in history if m["role"] == "tool")
    assert result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert result["content"] == "Saved under key 'plan'."

    show = stack.json("show", "e2e-openai")
    assert show["backend"] == "openai" and show["resolved_model"] == MODEL
    assert show["cycle_metrics"][0]["prompt_tokens"] == 130
    assert show["reflection_history"] == ["Cycle 1: I wrote a plan.", "Cycle 2: I read it back."]
    listed = {row["run_id"]: row for row in stack.json("runs")}["e2e-openai"]
    assert (listed["backend"], listed["resolved_model"]) == ("openai", MODEL)

    exported = tmp_path / "logs"
    stack.cli("export", "e2e-openai", "--out", str(exported), check=True)
    export_text = (exported / "e2e-openai.jsonl").read_text()
    records = [json.loads(line) for line in export_text.splitlines()]
    calls = [r["payload"] for r in records if r["event_type"] == "LLM_INVOCATION"]
    assert {(c["backend"], c["model"]) for c in calls} == {("openai", MODEL)}

    secret = KEY.encode()
    stored = everything_in_redis(stack.env["REDIS_URL"])
    assert b"Saved under key 'plan'." in stored  # the contents are read, not just the keys
    assert secret not in stored
    assert KEY not in export_text
    for file in stack.data_dir.rglob("*"):  # logs, archives, the memory store
        if file.is_file():
            assert secret not in file.read_bytes(), file
    assert KEY not in proc.stdout + proc.stderr
