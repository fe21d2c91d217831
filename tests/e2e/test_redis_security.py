"""Redis with an ACL user and TLS, end to end: every service and the CLI reach it
through one ``REDIS_URL`` (``rediss://USER:PASSWORD@host:port/0?ssl_ca_certs=...``),
and the password appears nowhere: not in output, service logs, events or exports."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from contreact_bus.local_redis import free_port
from tests.support.stack import Stack
from tests.support.stack_env import stack_environment

pytestmark = [pytest.mark.e2e]

PASSWORD = "s3cret-Pa55word-9f2c"


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (it is its own CA)."""
    cert, key = folder / "redis.crt", folder / "redis.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def secure_redis(tmp_path: Path) -> Iterator[str]:
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make the test certificate (apt-get install openssl)")
    cert, key = make_certificate(tmp_path)
    port = free_port()
    proc = subprocess.Popen(
        [
            "redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
            "--tls-cert-file", str(cert), "--tls-key-file", str(key),
            "--tls-ca-cert-file", str(cert), "--tls-auth-clients", "no",
            "--dir", str(tmp_path), "--save", "", "--appendonly", "no",
            "--user", "default", "off",
            "--user", "contreact", "on", f">{PASSWORD}", "~*", "&*", "+@all",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    url = f"rediss://contreact:{PASSWORD}@127.0.0.1:{port}/0?ssl_ca_certs={cert}"
    try:
        from contreact_bus.local_redis import wait_until_answers

        try:
            wait_until_answers(url, timeout_s=10)
        except Exception:
            proc.terminate()
            output = proc.communicate(timeout=10)[0]
            pytest.fail(f"redis-server with TLS did not start: {output[-2000:]}")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_run_through_tls_and_an_acl_user_leaks_no_password(
    secure_redis: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    env = stack_environment(data_dir, redis_url=secure_redis)
    stack = Stack(env=env, data_dir=data_dir, workdir=tmp_path)
    config = tmp_path / "tls.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "run_id": "tls-1",
                "model_name": "scripted",
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
                        {"content": "Done over TLS."},
                    ]
                },
            }
        )
    )
    outputs = []
    up = stack.cli("up", check=True)
    try:
        outputs.append(up.stdout + up.stderr)
        run = stack.cli("run", str(config), timeout=180)
        outputs.append(run.stdout + run.stderr)
        assert run.returncode == 0, run.stdout + run.stderr
        for args in (("status",), ("status", "--json"), ("export", "tls-1", "--out", "out")):
            proc = stack.cli(*args, check=True)
            outputs.append(proc.stdout + proc.stderr)
        # A wrong password is one line, and it does not show the password either.
        wrong = stack.env | {"REDIS_URL": secure_redis.replace(PASSWORD, "wrong-guess-77")}
        proc = subprocess.run(
            [sys.executable, "-m", "contreact_cli", "runs"],
            env=wrong,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "wrong-guess-77" not in proc.stderr
    finally:
        outputs.append(stack.cli("down").stdout)
    assert "Done over TLS." in (tmp_path / "out" / "tls-1.jsonl").read_text()
    texts = [*outputs]
    texts += [p.read_text(errors="replace") for p in (data_dir / "logs").glob("*")]
    texts += [p.read_text(errors="replace") for p in (data_dir / "runs").glob("*")]
    texts.append((tmp_path / "out" / "tls-1.jsonl").read_text())
    assert texts and all(PASSWORD not in text for text in texts)
    assert any("***" in text for text in outputs)  # the URL is shown, redacted
