"""``contreact assess matrix EXP [--json]`` on a real Redis: the experiment's replicas
from its record, their assessment records from the archive and Redis, the matrix as
text and as the JSON the dashboard serves; an unknown experiment is one line."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contreact_bus.archive import write_archive
from contreact_bus.assessments import RatingKey, append_archive, record
from contreact_bus.experiments import ReplicaEntry, queue_entry
from contreact_cli.main import main
from tests.support.sim import Sim, make_config, say
from tests.support.swap_runs import rating

pytestmark = pytest.mark.redis

MODELS = {"A": "m/a", "B": "m/b"}
TS = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)


@pytest.fixture
def experiment(redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(data))
    archive = data / "runs"
    entries = []
    for label, model in MODELS.items():
        for letter in "AB":
            run_id = f"exp-{label}-{letter}"
            sim = Sim(make_config(run_id=run_id, model_name=model, experiment="exp", cycle_count=1))
            sim.drive([say("done")])
            write_archive(archive, run_id, sim.log)
            entries.append(ReplicaEntry(f"{label}-{letter}", label, letter, model, run_id, 1, "d"))
    append_archive(archive, "exp-A-A", [rating("exp-A-A", "m/a", 4), rating("exp-A-A", "m/b", 8)])

    async def setup() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            async with client.pipeline(transaction=False) as pipe:
                for entry in entries:
                    queue_entry(pipe, "exp", entry)
                await pipe.execute()
            later = [
                rating("exp-A-B", "m/a", 6),
                rating("exp-A-B", "m/b", None, "refused"),
                rating("exp-B-A", "m/a", 2),
                rating("exp-B-A", "m/b", 5),
                rating("exp-B-B", "m/a", 3),
                rating("exp-B-B", "m/b", 7),
            ]
            for event in later:
                await record(client, event, RatingKey("pei", event.evaluator, 1))
        finally:
            await client.aclose()

    asyncio.run(setup())
    return data


def run_cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return int(exited.value.code or 0)


def test_the_matrix_as_text_and_json(experiment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli("assess", "matrix", "exp")
    text = capsys.readouterr().out
    assert code == 0, text
    assert "Assessments of experiment exp: 4 run(s), 8 record(s)" in text
    lines = {line.split("  ")[0]: line for line in text.splitlines()}
    assert lines["A"].split()[1:] == ["5.0", "n=2*", "8.0", "n=1", "!1"]  # (4 + 6) / 2; refused
    assert lines["B"].split()[1:] == ["2.5", "n=2", "6.0", "n=2*"]
    assert "Self-preference" in text and "The paper's Table 2" in text
    code = run_cli("assess", "matrix", "exp", "--json")
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["experiment"] == "exp"
    cells = {(c["history"], c["evaluator"]): c["mean"] for c in data["pei"]["cells"]}
    assert cells == {("A", "A"): 5.0, ("A", "B"): 8.0, ("B", "A"): 2.5, ("B", "B"): 6.0}
    assert data["pei"]["unrated"] == {"refused": 1}


def test_an_unknown_experiment_is_one_line(
    experiment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli("assess", "matrix", "nope")
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1
    assert "no experiment 'nope' in Redis" in err
    code = run_cli("assess", "matrix", "a}{b")
    assert code == 2 and capsys.readouterr().err.startswith("contreact: error: ")
