"""The report: one self-contained HTML file of an experiment (design, Table 1 with
intervals, paired differences, per-cycle charts, every run's reflections, advisories and
operator exchanges, how to reproduce it). ``document.build_report`` computes what the
page shows, ``document.render_report`` renders it (Jinja, autoescape on)."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from contreact_analysis.frames.sources import collect_frames
from contreact_analysis.report.document import Report, build_report, render_report
from contreact_events.config.run_places import ForkView

__all__ = ["Report", "build_report", "experiment_report", "render_report"]


async def experiment_report(
    redis: aioredis.Redis | None,
    archive_dir: Path,
    experiment: str,
    *,
    command: str,
    forks: ForkView = "none",
) -> str:
    """The HTML report of every run of ``experiment`` (Redis, then the archives)."""
    frames = await collect_frames(redis, archive_dir, experiment=experiment)
    report = build_report(frames, title=f"Experiment {experiment}", command=command, forks=forks)
    return render_report(report)
