"""``contreact assess`` end to end on a real Redis, real rq workers (burst mode) and a
real LLM worker: a run named and also in ``--experiment`` is rated once and exported
once, failed ratings included; a person's reading (``assess read``) is appended, never
edits a record, and is what the status, the export, the matrix, ``verify`` and the
dashboard use, with who read it; ``assess status`` refuses a run that does not exist
and reads the archives when Redis has forgotten the experiment; evaluators answer at
their own settings, never the rated run's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from contreact_bus import assessments
from contreact_bus.archive import write_archive
from contreact_bus.assessments.evaluators import evaluator_of_run
from contreact_bus.experiments import ReplicaEntry, queue_entry
from contreact_cli.main import main
from contreact_events.catalog.assessment import AssessmentRead, RunAssessed
from contreact_events.core.fold import fold_all
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
from tests.support.fake_ollama import running_fake_ollama
from tests.support.inbox import use_one_shard

pytestmark = pytest.mark.redis

ANSWERS = {
    "A": ("m/a", {"replies": [{"content": "Level 3"}], "repeat": True}),
    "B": ("m/b", {"replies": [{"content": "Between the third and the fourth, hard to say."}]}),
    "C": ("m/c", {"replies": [{"error": "the model crashed"}], "repeat": True}),
}
"""Each label's model, and what it answers (as an evaluator too): a level, no level,
a failure that is not transient."""
RUNS = [f"exp-{label}-A" for label in ANSWERS]


@pytest.fixture
def data(redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An ended experiment of three models (one replica each), archived, listed in Redis."""
    data_dir = tmp_path / "data"
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(data_dir))
    client = redis.Redis.from_url(redis_url)
    for label, (model, script) in ANSWERS.items():
        run_id = f"exp-{label}-A"
        events = finished_run(run_id, model, "", script=script, experiment="exp")
        write_archive(data_dir / "runs", run_id, events)
        entry = ReplicaEntry(f"{label}-A", label, "A", model, run_id, 1, "d" * 64)
        with client.pipeline(transaction=False) as pipe:
            queue_entry(pipe, "exp", entry)  # type: ignore[arg-type]
            pipe.execute()
    client.close()

    async def shard() -> None:
        import redis.asyncio as aioredis

        aclient = aioredis.Redis.from_url(redis_url)
        await use_one_shard(aclient)
        await aclient.aclose()

    asyncio.run(shard())
    return data_dir


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def work(redis_url: str, data_dir: Path, **worker: Any) -> None:
    """An LLM worker and an assessor (burst) until the queue is empty."""

    async def go() -> None:
        async with llm_worker(redis_url, **worker):
            log = data_dir / "rq.log"
            proc = start_assessor(assessor_env(redis_url, data_dir), log=log)
            assert await wait_process(proc, timeout_s=600) == 0, log.read_text()[-3000:]

    asyncio.run(go())


def status(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    code, out, err = cli(capsys, "assess", "status", *args, "--json")
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


def test_a_run_named_and_in_the_experiment_is_rated_and_exported_once(
    data: Path, redis_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = cli(capsys, "assess", "exp-A-A", "--experiment", "exp", "--json")
    assert code == 0, err
    placed = json.loads(out)
    assert len(placed) == 9 and {p["fate"] for p in placed} == {"enqueued"}  # 3 runs x 3, once
    work(redis_url, data)
    code, out, err = cli(
        capsys, "assess", "export", "exp-A-A", "--experiment", "exp", "--out", str(tmp_path / "x")
    )
    assert code == 0, err
    lines = [json.loads(line) for line in (tmp_path / "x" / "pei_results.jsonl").open()]
    keys = [(line["run_id"], line["evaluator"], line["repeat"]) for line in lines]
    assert len(keys) == len(set(keys)) == 9  # each rating once
    failed = [line for line in lines if line["evaluator"] == "m/c"]
    assert len(failed) == 3  # the failed ratings are there too
    assert all(f["status"] == "failed" and f["pei_rating"] is None for f in failed)
    assert all("the model crashed" in f["error"] for f in failed)
    assert {line["pei_rating"] for line in lines if line["evaluator"] == "m/a"} == {3}
    for run_id in RUNS:
        archived = (tmp_path / "x" / f"{run_id}.assessments.jsonl").read_text().splitlines()
        assert len(archived) == 3


def test_a_persons_reading_is_appended_and_used_everywhere_with_who_read_it(
    data: Path, redis_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli(capsys, "assess", "--experiment", "exp")[0] == 0
    patterns = ["--evaluator", "m/b", "--instrument", "patterns"]
    assert cli(capsys, "assess", "exp-A-A", "--experiment", "exp", *patterns)[0] == 0
    work(redis_url, data)
    rows = {(r["run_id"], r["evaluator"], r["instrument"]): r for r in status(capsys, "exp-A-A")}
    unread = rows[("exp-A-A", "m/b", "pei")]
    assert unread["state"] == "unparseable" and unread["read_by"] == "parser"
    record_id = unread["record_id"]
    failed_id = rows[("exp-A-A", "m/c", "pei")]["record_id"]
    patterns_id = rows[("exp-A-A", "m/b", "patterns")]["record_id"]

    def read(*args: str) -> tuple[int, str]:
        code, out, err = cli(capsys, "assess", "read", *args)
        return code, (out + err).strip()

    for args, said in [
        (("nope", "--level", "3", "--by", "A. Reader"), "no assessment record nope"),
        ((record_id, "--level", "11", "--by", "A. Reader"), "--level 11 is off the pei scale"),
        ((record_id, "--label", "systematic_production", "--by", "x"), "a pei rating is a level"),
        ((patterns_id, "--label", "nonsense", "--by", "x"), "the patterns rubric has no such"),
        ((failed_id, "--level", "3", "--by", "x"), "is a failed rating"),
        ((record_id, "--level", "3"), "say who reads it"),
    ]:
        code, text = read(*args)
        assert code != 0 and said in text, text
        assert len(text.splitlines()) == 1, text  # one clear line
    code, text = read(record_id, "--level", "6", "--by", "A. Reader", "--note", "the lower one")
    assert code == 0, text
    code, text = read(record_id, "--level", "5", "--by", "B. Reader")
    assert code == 0 and "read as 5 by B. Reader" in text
    assert read(patterns_id, "--label", "systematic_production", "--by", "x")[0] == 0

    rows = {(r["run_id"], r["evaluator"], r["instrument"]): r for r in status(capsys, "exp-A-A")}
    row = rows[("exp-A-A", "m/b", "pei")]
    assert (row["state"], row["read_by"]) == ("rated 5 (read by B. Reader)", "person")
    stored = {
        r.event_id: r
        for r in assessments.read_archive(data / "runs", "exp-A-A")
        if isinstance(r, RunAssessed)
    }
    assert stored[record_id].status == "unparseable"  # the rating's record never changes
    archived = assessments.read_archive(data / "runs", "exp-A-A")
    readings = [r for r in archived if isinstance(r, AssessmentRead)]
    assert [(r.value, r.label, r.by) for r in readings] == [
        (6, None, "A. Reader"), (5, None, "B. Reader"), (None, "systematic_production", "x"),
    ]  # fmt: skip

    assert cli(capsys, "assess", "export", "exp-A-A", "--out", str(tmp_path / "x"))[0] == 0
    lines = [json.loads(line) for line in (tmp_path / "x" / "pei_results.jsonl").open()]
    (line,) = [x for x in lines if x["evaluator"] == "m/b"]
    assert (line["pei_rating"], line["read_by"], line["read_by_name"]) == (5, "person", "B. Reader")

    code, out, err = cli(capsys, "assess", "matrix", "exp", "--json")
    assert code == 0, err
    pei = json.loads(out)["pei"]
    assert pei["read_by"] == {"parser": 3, "person": 1} and pei["person_cells"] == 1
    cell = next(c for c in pei["cells"] if (c["history"], c["evaluator"]) == ("A", "B"))
    assert (cell["mean"], cell["read_by"]) == (5.0, {"person": 1})
    code, out, _ = cli(capsys, "assess", "matrix", "exp")
    assert "Ratings read 3 by the parser, 1 by a person (1 cells)." in out

    code, out, err = cli(capsys, "assess", "verify", "--experiment", "exp", "--json")
    assert code == 0, out
    checked = json.loads(out)
    assert all(row["ok"] for row in checked) and len(checked) == 9 + 3 + 3  # readings too

    report = asyncio.run(rebuild(data / "ui.db", None, data / "runs"))
    assert not report.problems
    app = create_app(UISettings(data_dir=data, redis_url=redis_url, project=False))
    with TestClient(app) as client:
        page = client.get("/assessments.json", params={"run": "exp-A-A"}).json()
        (shown,) = [r for r in page["rows"] if r["event_id"] == record_id]
        assert (shown["value"], shown["read_by"], shown["reader"]) == (5.0, "person", "B. Reader")
        assert shown["read_at"] is not None
        html = client.get("/assessments", params={"run": "exp-A-A"}).text
        assert 'data-read-by="person"' in html and "B. Reader" in html
        compare = client.get("/compare.json", params={"experiment": "exp"}).json()
        assert compare["assessments"]["matrix"]["pei"]["person_cells"] == 1


def test_status_names_a_missing_run_and_reads_the_archives_once_redis_forgot(
    data: Path, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "assess", "status", "NO-SUCH-RUN")
    assert code != 0 and "no run NO-SUCH-RUN" in err and not out
    assert len(err.strip().splitlines()) == 1
    assert cli(capsys, "assess", "--experiment", "exp")[0] == 0
    work(redis_url, data)
    before = status(capsys, "--experiment", "exp")
    assert len(before) == 9 and all(row["recorded"] for row in before)
    redis.Redis.from_url(redis_url).flushall()  # only the archives are left
    after = status(capsys, "--experiment", "exp")
    assert [(r["run_id"], r["evaluator"], r["state"]) for r in after] == [
        (r["run_id"], r["evaluator"], r["state"]) for r in before
    ]
    code, out, err = cli(capsys, "assess", "status", "--experiment", "nope")
    assert code != 0 and "no experiment 'nope'" in err


def test_evaluators_answer_at_their_own_settings_and_a_seed_per_repeat(
    data: Path, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = finished_run(
        "solo",
        "m/s",
        "Level 2",
        model_options={"seed": 42, "num_predict": 192, "temperature": 0.7, "num_ctx": 8192},
    )
    write_archive(data / "runs", "solo", run)
    own = evaluator_of_run(fold_all(run))
    assert own.options == {"temperature": 0.1, "num_ctx": 8192}  # no seed, no output cap
    with running_fake_ollama(["judge:latest"]) as fake:
        fake.respond = lambda body: "Level 4"
        args = ["--evaluator", "judge", "--backend", "ollama", "--host", fake.host]
        code, _out, err = cli(capsys, "assess", "solo", *args, "--repeats", "3", "--seed", "7")
        assert code == 0, err
        assert cli(capsys, "assess", "solo", "--evaluator", "m/s")[0] == 0
        work(redis_url, data)
        sent = sorted(
            (body["options"] for body in fake.chat_requests()), key=lambda o: o.get("seed", 0)
        )
    assert sent == [{"temperature": 0.1, "seed": seed} for seed in (7, 8, 9)]
    records = assessments.read_archive(data / "runs", "solo")
    options = {(r.evaluator, r.repeat): r.options for r in records}
    assert options == {
        ("judge", 1): {"temperature": 0.1, "seed": 7},
        ("judge", 2): {"temperature": 0.1, "seed": 8},
        ("judge", 3): {"temperature": 0.1, "seed": 9},
        ("m/s", 1): {"temperature": 0.1, "num_ctx": 8192},
    }
