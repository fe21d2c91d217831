"""The lineage page's JSON contract: a fork beside its parent, cycle by cycle from the
cycle after the fork (the fork rows the run page shows too are in ``pages``)."""

from __future__ import annotations

from contreact_ui.models.pages import ForkLink, SettingChange
from contreact_ui.models.rows import _Model


class CycleSide(_Model):
    """One run's cycle: its figures, similarity and reflection (None: no such cycle)."""

    figures: dict[str, float]
    max_similarity: float | None
    level: str | None
    reflection: str | None


class CycleComparison(_Model):
    cycle: int
    fork: CycleSide | None
    parent: CycleSide | None


class LineagePage(_Model):
    """``/runs/{run_id}/lineage``: where a fork comes from and how it went on, and the
    run's own forks."""

    run_id: str
    parent_run_id: str | None
    """None: the run is not a fork (the other fields are then empty)."""
    at_cycle: int | None
    """The parent's cycle whose end the fork starts after."""
    parent_digest: str | None
    """The parent's state digest at the end of that cycle."""
    parent_shown: bool
    """False when the dashboard does not hold the parent (its cycles are then empty)."""
    changes: list[SettingChange]
    cycles: list[CycleComparison]
    """From ``at_cycle + 1`` on, as far as either run got."""
    forks: list[ForkLink] = []
    """The runs forked from this one that the dashboard holds."""
