"""Writing a run's log as seed-003 JSONL LogRecords (``export``, ``experiment export``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from contreact_cli.exceptions import CLIError
from contreact_events.history.export import export_records
from contreact_events.wire.codec import dumps


def check_out_dir(out_dir: Path) -> None:
    """Refuse an output folder that is a file or cannot be written, before any work."""
    if out_dir.exists() and not out_dir.is_dir():
        raise CLIError(f"--out {out_dir} is a file, not a folder: name a folder")
    probe = out_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise CLIError(f"--out {out_dir}: {probe} is not a writable folder: choose another")


def write_export(events: list[Any], path: Path) -> tuple[Path, dict[str, int]]:
    """Write the LogRecords atomically; return the path and the count per record type."""
    path.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("wb") as handle:
        for record in export_records(events):
            counts[record["event_type"]] = counts.get(record["event_type"], 0) + 1
            handle.write(dumps(record) + b"\n")
    tmp.replace(path)
    return path, counts
