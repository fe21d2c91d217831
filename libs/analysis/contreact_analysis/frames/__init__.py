"""The runs as dataframes: one table per level (runs, cycles, tool calls, chat
messages, events, operator exchanges, memory changes), built by folding each run's
log with the platform's own fold (``run_rows``), read from Redis or the archives
(``sources``), written as parquet or CSV (``files``)."""

from contreact_analysis.frames.files import FORMATS, Format, read_frames, write_frames
from contreact_analysis.frames.places import label_and_replica
from contreact_analysis.frames.run_rows import RunRows, run_rows
from contreact_analysis.frames.sources import collect_frames, experiment_runs, load_logs
from contreact_analysis.frames.tables import SCHEMAS, RunFrames, build_frames, frames_from_rows
from contreact_bus.archive import archived_experiment

__all__ = [
    "FORMATS",
    "SCHEMAS",
    "Format",
    "RunFrames",
    "RunRows",
    "archived_experiment",
    "build_frames",
    "collect_frames",
    "experiment_runs",
    "frames_from_rows",
    "label_and_replica",
    "load_logs",
    "read_frames",
    "run_rows",
    "write_frames",
]
