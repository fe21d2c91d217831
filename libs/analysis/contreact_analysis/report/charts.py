"""The report's charts: matplotlib figures rendered to inline SVG, text as SVG text in
the reader's own sans-serif font (no font file, no network; drawing the glyphs as
paths took most of the report's time). One chart per trajectory metric, a line per
model with its t interval shaded (where there is one). Margins are fixed rather than fitted
(``bbox_inches="tight"`` draws every figure twice)."""

from __future__ import annotations

import io
import re
from typing import Any, cast

import matplotlib

matplotlib.use("Agg")  # no display: render to files only

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

SVG_PARAMS: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "contreact",
    "font.size": 9,
    "font.family": "sans-serif",
}
METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)


def svg(figure: Figure) -> str:
    """The figure as an ``<svg>`` element (no XML prolog, no doctype, no date)."""
    buffer = io.StringIO()
    with matplotlib.rc_context(cast(Any, SVG_PARAMS)):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return METADATA.sub("", text[text.index("<svg") :])


def trajectory_chart(trajectories: pd.DataFrame, metric: str, title: str) -> str:
    """Mean per cycle of each group, the interval shaded where it is defined."""
    with matplotlib.rc_context(cast(Any, SVG_PARAMS)):
        figure, axes = plt.subplots(figsize=(6.4, 3.2))
        figure.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=0.9)
        rows = trajectories[trajectories["metric"] == metric]
        for group, series in rows.groupby("group", sort=True):
            series = series.sort_values("cycle")
            (line,) = axes.plot(series["cycle"], series["mean"], marker="o", label=str(group))
            axes.fill_between(
                series["cycle"],
                series["low"].astype("float64"),
                series["high"].astype("float64"),
                color=line.get_color(),
                alpha=0.18,
                linewidth=0,
            )
        axes.set_title(title)
        axes.set_xlabel("cycle")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
        if not rows.empty:
            axes.legend(fontsize=8, loc="best")
        else:
            axes.text(0.5, 0.5, "no ended cycle", ha="center", va="center")
    return svg(figure)


def runs_chart(runs: list[tuple[str, list[float]]], title: str, xlabel: str) -> str:
    """One thin line per run (``(group, values)``: its values in order), a colour per
    group, the legend one entry per group: every run's own course, grouped."""
    with matplotlib.rc_context(cast(Any, SVG_PARAMS)):
        figure, axes = plt.subplots(figsize=(6.4, 3.2))
        figure.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=0.9)
        colours: dict[str, Any] = {}
        for group, values in runs:
            shown = group not in colours
            (line,) = axes.plot(
                range(1, len(values) + 1),
                values,
                color=colours.get(group),
                alpha=0.6,
                linewidth=1,
                marker=".",
                label=group if shown else None,
            )
            colours.setdefault(group, line.get_color())
        axes.set_title(title)
        axes.set_xlabel(xlabel)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
        if runs:
            axes.legend(fontsize=8, loc="best")
    return svg(figure)
