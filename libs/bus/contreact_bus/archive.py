"""A finished run's log, archived as an event file (one JSON event per line).

``rebuild``, ``replay`` and ``export`` read it when Redis no longer holds the run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from contreact_events.catalog import Event
from contreact_events.catalog.run import RunRequested
from contreact_events.exceptions import ContReActEventError
from contreact_events.wire.codec import event_from_json, event_to_json

SUFFIX = ".events.jsonl"


def archive_path(archive_dir: Path, run_id: str) -> Path:
    return archive_dir / f"{run_id}{SUFFIX}"


def write_archive(archive_dir: Path, run_id: str, events: Sequence[Event]) -> Path:
    """Write atomically (temporary file, fsync, rename): a reader never sees half a file."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    path = archive_path(archive_dir, run_id)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("wb") as out:
        for event in events:
            out.write(event_to_json(event))
            out.write(b"\n")
        out.flush()
        os.fsync(out.fileno())
    tmp.replace(path)
    return path


def read_archive(archive_dir: Path, run_id: str) -> list[Event] | None:
    path = archive_path(archive_dir, run_id)
    if not path.exists():
        return None
    events = []
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                events.append(event_from_json(line, where=f"{path}:{number}"))
    return events


def archived_run_ids(archive_dir: Path) -> list[str]:
    if not archive_dir.is_dir():
        return []
    return sorted(p.name[: -len(SUFFIX)] for p in archive_dir.glob(f"*{SUFFIX}"))


def archived_experiment(archive_dir: Path, experiment: str) -> list[str]:
    """The archived runs whose first event (``RunRequested``) names ``experiment``
    (what an experiment's runs are once Redis no longer lists them)."""
    found = []
    for run_id in archived_run_ids(archive_dir):
        with archive_path(archive_dir, run_id).open("rb") as lines:
            first = lines.readline()
        try:
            event = event_from_json(first) if first.strip() else None
        except ContReActEventError:
            continue  # an unreadable archive is named when it is read, if it is asked for
        if isinstance(event, RunRequested) and event.config.experiment == experiment:
            found.append(run_id)
    return found
