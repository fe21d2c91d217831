"""Issue 29.3 and 29.8, where the user meets them: `contreact` as a subprocess. `report
--out` never writes over the platform's own files (a run's archive became HTML, exit
0: the run was lost once its log left Redis), writes over another file only with
``--force`` and over an earlier report freely; a failed write of `analyze`, `report` or
`assess export` is one line naming ``--out`` and the fix; `analyze` with nothing to
analyse says what to name."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from contreact_bus.archive import write_archive
from tests.support import cli_process
from tests.support.analysis_runs import EXPERIMENT, experiment_logs

pytestmark = [pytest.mark.redis]


@pytest.fixture
def data(redis_url: str, tmp_path: Path) -> Path:
    """An experiment whose runs are archived only (their logs have left Redis)."""
    import asyncio

    import redis.asyncio as aioredis

    from contreact_bus.runs import register_run

    folder = tmp_path / "data"

    async def put() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            for run, events in experiment_logs().items():
                await register_run(client, run, EXPERIMENT)
                write_archive(folder / "runs", run, events)
        finally:
            await client.aclose()

    asyncio.run(put())
    return folder


def one_line_error(proc: subprocess.CompletedProcess[str], *parts: str) -> None:
    cli_process.one_line_error(proc, *parts, start="--out ")


def contreact(data: Path, redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.contreact(data, redis_url, *args)


def test_report_never_writes_over_a_runs_archive(data: Path, redis_url: str) -> None:
    archive = next((data / "runs").glob("*.events.jsonl"))
    before = archive.read_bytes()
    for force in ((), ("--force",)):
        proc = contreact(data, redis_url, "report", EXPERIMENT, "--out", str(archive), *force)
        one_line_error(proc, "never overwritten", "choose a file outside")
        assert archive.read_bytes() == before
    copy = data.parent / "kept" / archive.name  # an archive copied away is still one
    copy.parent.mkdir()
    copy.write_bytes(before)
    proc = contreact(data, redis_url, "report", EXPERIMENT, "--out", str(copy), "--force")
    one_line_error(proc, "never overwritten")
    assert copy.read_bytes() == before
    supervisor = data / "supervisor.json"
    supervisor.write_text("{}")
    one_line_error(contreact(data, redis_url, "report", EXPERIMENT, "--out", str(supervisor)))
    assert supervisor.read_text() == "{}"


def test_report_writes_over_a_report_and_over_another_file_only_with_force(
    data: Path, redis_url: str
) -> None:
    target = data.parent / "report.html"
    first = contreact(data, redis_url, "report", EXPERIMENT, "--out", str(target))
    assert first.returncode == 0, first.stderr
    assert contreact(data, redis_url, "report", EXPERIMENT, "--out", str(target)).returncode == 0
    notes = data.parent / "notes.html"
    notes.write_text("<p>my notes</p>")
    proc = contreact(data, redis_url, "report", EXPERIMENT, "--out", str(notes))
    one_line_error(proc, "was not written by `contreact report`", "--force")
    assert notes.read_text() == "<p>my notes</p>"
    forced = contreact(data, redis_url, "report", EXPERIMENT, "--out", str(notes), "--force")
    assert forced.returncode == 0 and "contreact report" in notes.read_text()
    one_line_error(
        contreact(data, redis_url, "report", EXPERIMENT, "--out", str(data.parent)),
        "is a folder",
    )


def test_a_failed_write_names_out_and_the_fix(data: Path, redis_url: str) -> None:
    proc = contreact(data, redis_url, "report", EXPERIMENT, "--out", "/dev/full", "--force")
    one_line_error(proc, "--out /dev/full", "No space left on device", "choose another path")
    one_line_error(contreact(data, redis_url, "report", EXPERIMENT, "--out", "/dev/full"))
    proc = contreact(data, redis_url, "analyze", "--experiment", EXPERIMENT, "--out", "/dev/full")
    one_line_error(proc, "--out /dev/full", "not a folder")
    inside = data / "runs" / "tables"
    proc = contreact(data, redis_url, "analyze", "--experiment", EXPERIMENT, "--out", str(inside))
    one_line_error(proc, "outside")
    assert not inside.exists()
    proc = contreact(data, redis_url, "assess", "export", "--experiment", EXPERIMENT, "--out",
                     str(data / "runs"))  # fmt: skip
    one_line_error(proc, "choose a folder outside")
    proc = contreact(data, redis_url, "assess", "export", "--experiment", EXPERIMENT, "--out",
                     "/dev/full")  # fmt: skip
    one_line_error(proc, "--out /dev/full")


def test_analyze_without_runs_says_what_to_name(data: Path, redis_url: str) -> None:
    proc = contreact(data, redis_url, "analyze", "--out", str(data.parent / "t"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "not both" not in proc.stderr
    assert "--experiment NAME" in proc.stderr and "contreact analyze RUN" in proc.stderr


def test_an_unreadable_replica_is_left_out_and_named(data: Path, redis_url: str) -> None:
    """Issue 29.10's rule for analyze and report: go on with the readable replicas, name
    the one left out (stderr), exit 3 (as `memory-rebuild` over every run)."""
    broken = sorted((data / "runs").glob("*.events.jsonl"))[0]
    with broken.open("ab") as handle:
        handle.write(b"{not an event\n")
    run = broken.name.removesuffix(".events.jsonl")
    tables = data.parent / "tables"
    proc = contreact(data, redis_url, "analyze", "--experiment", EXPERIMENT, "--out", str(tables))
    assert proc.returncode == 3, proc.stderr
    assert f"skipped run {run}: its log cannot be read" in proc.stderr
    assert "runs.parquet  5 rows" in proc.stdout
    target = data.parent / "report.html"
    proc = contreact(data, redis_url, "report", EXPERIMENT, "--out", str(target))
    assert proc.returncode == 3, proc.stderr
    assert f"skipped run {run}: its log cannot be read" in proc.stderr
    assert "(5 runs; 1 left out, unreadable)" in proc.stdout and target.is_file()
