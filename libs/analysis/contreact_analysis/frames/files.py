"""Dataframes to files and back: one file per table (``runs.parquet``, ``cycles.csv``
...), read back with the declared dtypes (CSV keeps no types: ``read_frames`` applies
them). A missing value is written ``\\N`` in CSV (as PostgreSQL's COPY does), so an
empty text stays an empty text."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd

from contreact_analysis.exceptions import AnalysisError
from contreact_analysis.frames.tables import SCHEMAS, TS, RunFrames

Format = Literal["parquet", "csv"]
FORMATS: tuple[Format, ...] = ("parquet", "csv")
CSV_NULL = "\\N"


def write_frames(frames: RunFrames, out_dir: Path, fmt: Format = "parquet") -> list[Path]:
    """Write every table into ``out_dir`` (made if missing); the files written."""
    if fmt not in FORMATS:
        raise AnalysisError(f"format {fmt!r}: choose parquet or csv")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in frames.tables().items():
        path = out_dir / f"{name}.{fmt}"
        if fmt == "parquet":
            table.to_parquet(path, index=False, engine="pyarrow")
        else:
            table.to_csv(path, index=False, na_rep=CSV_NULL)
        written.append(path)
    return written


def read_frames(directory: Path, fmt: Format = "parquet") -> RunFrames:
    """The tables ``write_frames`` wrote, with their dtypes."""
    tables = {}
    for name, schema in SCHEMAS.items():
        path = directory / f"{name}.{fmt}"
        if not path.is_file():
            raise AnalysisError(f"{path} is missing: write the tables with `contreact analyze`")
        if fmt == "parquet":
            tables[name] = pd.read_parquet(path, engine="pyarrow")
            continue
        plain = {c: d for c, d in schema.items() if d != TS}
        table = pd.read_csv(path, dtype=plain, keep_default_na=False, na_values=[CSV_NULL])
        for column, dtype in schema.items():
            if dtype == TS:
                stamps = pd.to_datetime(table[column], utc=True, format="ISO8601")
                table[column] = stamps.astype(TS)
        tables[name] = table
    return RunFrames(**tables)
