"""Writing a run's log as seed-003 JSONL LogRecords (``export``, ``experiment export``),
and what every ``--out`` is held to: the platform's own files (the data folder: run
archives, the memory store) are never overwritten, a file another command or a person
wrote only with ``--force``, and a failed write is one line naming ``--out`` and a fix."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contreact_bus.archive import SUFFIX as EVENTS_SUFFIX
from contreact_bus.assessments import ARCHIVE_SUFFIX as ASSESSMENTS_SUFFIX
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


MARK_BYTES = 4096
"""How much of an existing file is read for the mark of the command that wrote it."""


def platform_owned(path: Path, data_dir: Path) -> bool:
    """Whether ``path`` is the platform's: inside the data folder (run archives, the
    memory store, the supervisor's files), or any run's archive wherever it lies."""
    if path.name.endswith((EVENTS_SUFFIX, ASSESSMENTS_SUFFIX)):
        return True
    return path.resolve().is_relative_to(data_dir.resolve())


def check_out_folder(out_dir: Path, data_dir: Path) -> None:
    """An output folder: not the data folder or inside it, and writable."""
    if platform_owned(out_dir, data_dir):
        raise CLIError(
            f"--out {out_dir}: the data folder {data_dir} holds the platform's own files "
            "(run archives, the memory store): choose a folder outside it"
        )
    check_out_dir(out_dir)


def check_out_file(path: Path, data_dir: Path, *, mark: str, command: str, force: bool) -> None:
    """Refuse, before any work, to write ``path`` over what the platform owns (never),
    a folder (never) or a file ``command`` did not write (it lacks ``mark``) unless
    ``force``. A new file, or one ``command`` wrote before, is fine."""
    if platform_owned(path, data_dir):
        raise CLIError(
            f"--out {path}: the platform's own files (run archives, the data folder "
            f"{data_dir}) are never overwritten: choose a file outside it"
        )
    if path.is_dir():
        raise CLIError(f"--out {path} is a folder: name the file to write, e.g. {path}/report.html")
    if not path.exists() and not path.is_symlink():
        check_out_dir(path.parent)
        return
    if force:
        return
    try:
        with path.open("rb") as handle:
            head = handle.read(MARK_BYTES)
    except OSError:
        head = b""
    if mark.encode() not in head:
        raise CLIError(
            f"--out {path} exists and was not written by `contreact {command}`: "
            "choose another file, or add --force to overwrite it"
        )


def write_out_file(path: Path, text: str, what: str) -> None:
    """Write ``text`` whole: a regular file through a temporary file beside it (a failed
    write leaves the old one), anything else (``/dev/stdout``) in place."""
    with out_errors(path, what):
        if path.exists() and not path.is_file():
            path.write_text(text, encoding="utf-8")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def out_errors(path: Path, what: str) -> Iterator[None]:
    """A failed write under ``--out path`` as one line: the option, the reason, a fix."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = f" at {exc.filename}" if exc.filename and str(exc.filename) != str(path) else ""
        raise CLIError(
            f"--out {path}: cannot write {what} ({reason}{where}): free space or choose "
            "another path with --out"
        ) from None
