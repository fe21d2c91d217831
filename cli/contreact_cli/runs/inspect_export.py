"""``export --format inspect`` and ``experiment export --format inspect``: runs as
Inspect logs (``contreact_analysis.inspect_log``), one ``.eval`` per (experiment,
model), with the runs' PEI ratings and the experiment's agreement figures."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from contreact_analysis.assessments.experiment import experiment_places
from contreact_analysis.exceptions import AnalysisError
from contreact_analysis.inspect_log import RunInput, eval_logs, require_inspect, write_eval_logs
from contreact_bus.assessments import read_assessments
from contreact_bus.experiments import logged_facts
from contreact_bus.runs import load_events
from contreact_cli.connection import optional_redis
from contreact_cli.exceptions import CLIError
from contreact_cli.runs.export_file import check_out_dir
from contreact_cli.settings import CLISettings
from contreact_events.catalog.assessment import AssessmentEvent
from contreact_events.config.run_places import RunPlace, run_places
from contreact_events.core.fold import fold_all


async def export_inspect(
    settings: CLISettings, run_ids: Sequence[str], out_dir: Path
) -> list[Path]:
    """The named runs, placed among themselves (a replica under its experiment's model,
    a fork of one of them as a fork)."""
    _ready(out_dir)
    redis = await optional_redis(settings)
    try:
        logs = {
            run_id: await load_events(redis, settings.archive_dir, run_id) for run_id in run_ids
        }
        facts = []
        for events in logs.values():
            state = fold_all(events)
            experiment = state.config.experiment if state.config else None
            facts.append(logged_facts(events, experiment or "", state))
        places = run_places(facts)
        records = await read_assessments(redis, settings.archive_dir, list(run_ids))
    finally:
        if redis is not None:
            await redis.aclose()
    runs = [RunInput(places[run_id], logs[run_id]) for run_id in run_ids]
    return await _write(runs, records, out_dir)


async def export_experiment_inspect(
    settings: CLISettings, name: str, out_dir: Path, *, with_forks: bool = True
) -> list[Path]:
    """Every run of the experiment that has a log (each replica's current attempt, and
    the forks of its file), as the dashboard places them."""
    _ready(out_dir)
    redis = await optional_redis(settings)
    if redis is None:
        raise CLIError("experiment export needs Redis (the experiment's record is there)")
    try:
        try:
            places = await experiment_places(redis, settings.archive_dir, name)
        except AnalysisError as exc:
            raise CLIError(str(exc)) from None
        chosen = _current(places, with_forks)
        logs = {p.run_id: await load_events(redis, settings.archive_dir, p.run_id) for p in chosen}
        records = await read_assessments(redis, settings.archive_dir, [p.run_id for p in places])
    finally:
        await redis.aclose()
    runs = [RunInput(place, logs[place.run_id]) for place in chosen]
    return await _write(runs, records, out_dir / name)


def _current(places: Sequence[RunPlace], with_forks: bool) -> list[RunPlace]:
    """Each replica's current attempt, and the file's forks (no run made outside it)."""
    latest: dict[tuple[str, str, str], RunPlace] = {}
    for place in places:
        if place.kind == "outside" or (place.kind == "fork" and not with_forks):
            continue
        key = (place.kind, place.group, place.letter)
        if key not in latest or place.attempt > latest[key].attempt:
            latest[key] = place
    return list(latest.values())


def _ready(out_dir: Path) -> None:
    try:
        require_inspect()
    except AnalysisError as exc:
        raise CLIError(str(exc)) from None
    check_out_dir(out_dir)


async def _write(
    runs: list[RunInput],
    records: dict[str, list[AssessmentEvent]],
    out_dir: Path,
) -> list[Path]:
    logs = eval_logs(runs, records)
    try:
        return await asyncio.to_thread(write_eval_logs, logs, out_dir)
    except OSError as exc:
        raise CLIError(
            f"cannot write the Inspect logs into {out_dir} ({exc.strerror or exc}): "
            "choose another folder with --out"
        ) from None
