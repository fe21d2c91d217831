"""The listings print what Redis holds without control characters, one line per row:
a run's model, backend and status (``contreact runs``) and a dead letter's stream and
reason (``contreact deadletters``, whose reason quotes the message it could not read)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from contreact_cli.main import main
from contreact_events.names import DEAD_LETTER_STREAM, RUNS_INDEX, run_meta_key

pytestmark = pytest.mark.redis

HOSTILE = "evil\n\x1b[2J\x1b[31mred\r\x07\u202etxt"


@pytest.mark.parametrize("command", ["runs", "deadletters"])
def test_a_listing_prints_hostile_text_clean(
    command: str,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(tmp_path / "data"))
    client = redis.Redis.from_url(redis_url)
    client.zadd(RUNS_INDEX, {"r1": 1})
    client.hset(
        run_meta_key("r1"),
        mapping={"run_id": "r1", "status": HOSTILE, "model": HOSTILE, "backend": HOSTILE},
    )
    client.xadd(DEAD_LETTER_STREAM, {"stream": HOSTILE, "reason": f"cannot decode {HOSTILE}"})
    client.close()
    with pytest.raises(SystemExit) as exited:
        main([command])
    assert exited.value.code == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in line), repr(line)
    # The escape sequences are gone, not shown as "[2J[31m" (issue 28, defect 8); the
    # other control characters show as U+FFFD, as on the dashboard.
    assert "\u202e" not in line and "[31m" not in line and "[2J" not in line
    assert "evil red\ufffd\ufffd\ufffdtxt" in line
