"""Table 1 of the paper: which figures it reports, how each is computed from a run's
cycle metrics, and the paper's own values (``paper_results.yaml``). One definition for
the dashboard's comparison page and the analysis package's statistics. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from contreact_events.catalog.cycle import CycleMetrics
from contreact_events.config.strict_yaml import load_yaml


class Table1Metric(NamedTuple):
    """One row of Table 1: its name in ``paper_results.yaml``, its label, the
    ``CycleMetrics`` field summed over a run's cycles (None: the run's final count of
    unique memory keys) and the divisor the paper shows it with (1000: thousands)."""

    metric: str
    label: str
    source: str | None
    scale: float


TABLE1: tuple[Table1Metric, ...] = (
    Table1Metric("memory_tools", "Memory operations", "memory_ops_total", 1.0),
    Table1Metric("messages", "Messages to the operator", "messages_to_operator", 1.0),
    Table1Metric("memory_keys", "Final unique memory keys", None, 1.0),
    Table1Metric("reflection_kchars", "Reflection characters (k)", "reflection_chars", 1000.0),
    Table1Metric("response_kchars", "Response characters (k)", "response_chars", 1000.0),
    Table1Metric(
        "memory_write_kchars", "Memory-write characters (k)", "memory_write_chars", 1000.0
    ),
)


@dataclass(frozen=True)
class PaperTable1:
    columns: list[str]
    """The paper's models."""
    rows: dict[str, list[float | None]]
    """metric -> one value per column (None where the transcription lost the digit)."""

    def value(self, metric: str, column: str) -> float | None:
        values = self.rows.get(metric, [])
        index = self.columns.index(column) if column in self.columns else -1
        return values[index] if 0 <= index < len(values) else None


@cache
def paper_results() -> dict[str, Any]:
    """The paper's Tables 1 and 2 as transcribed in ``protocol/paper_results.yaml``."""
    path = resources.files("contreact_events").joinpath("protocol", "paper_results.yaml")
    data: dict[str, Any] = load_yaml(path.read_text("utf-8"))
    return data


def paper_table1() -> PaperTable1:
    raw = dict(paper_results()["table1"])
    columns = [str(c) for c in raw.pop("columns")]
    return PaperTable1(columns=columns, rows={k: list(v) for k, v in raw.items()})


def run_table1(metrics: Sequence[CycleMetrics], memory_keys: int) -> dict[str, float]:
    """A run's Table 1 figures: each source summed over its cycles, scaled; the final
    unique memory keys as given."""
    figures: dict[str, float] = {}
    for row in TABLE1:
        if row.source is None:
            total: float = memory_keys
        else:
            total = sum(float(getattr(m, row.source)) for m in metrics)
        figures[row.metric] = total / row.scale
    return figures
