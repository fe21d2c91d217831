"""The assessments' JSON contracts: a record as a page shows it, Table 2 of a compare
page's runs, the ratings page (read by ``contreact_ui.assessments``)."""

from __future__ import annotations

from datetime import datetime

from contreact_analysis.assessments.results import AssessmentMatrix
from contreact_ui.models.rows import _Model

RAW_LIMIT = 4000
"""Characters of a raw answer a page shows (the rest is counted; the export has it all)."""


class AssessmentRow(_Model):
    """One assessment record as a page shows it."""

    run_id: str
    history: str
    """The rated run's model label (Table 2's row)."""
    replica: str
    evaluator: str
    """The evaluator's label (Table 2's column): its model's label in the experiment."""
    evaluator_model: str
    instrument: str
    repeat: int
    status: str
    """rated, unparseable, refused, off_scale, or failed (no answer came back)."""
    value: float | None
    label: str | None
    reason: str | None
    note: str
    raw: str
    """The raw answer (or the failure), its first ``RAW_LIMIT`` characters: untrusted text."""
    raw_chars: int
    raw_truncated: bool
    ts: datetime | None
    event_id: str
    read_by: str | None = None
    """Who read the rating: parser, follow_up (the evaluator's answer to the follow-up
    question) or person; None for a failed rating."""
    reader: str | None = None
    """The person who read it, when ``read_by`` is person (untrusted text)."""
    read_at: datetime | None = None


class Table2Live(_Model):
    """Table 2 of the runs a compare page shows, from their assessment records."""

    runs: int
    records: int
    matrix: AssessmentMatrix | None
    """None when none of the runs has a record."""
    ratings_query: str
    """The query of the compare page's selection, for the links to the ratings."""
    note: str | None
    """Why the table may be incomplete (Redis not answering: the archive alone)."""


class RatingsPage(_Model):
    experiment: str | None
    runs: list[str]
    models: list[str]
    history: str | None
    evaluator: str | None
    instrument: str | None
    status: str | None
    rows: list[AssessmentRow]
    total: int
    """Records that match (``rows`` holds the first ``MAX_ROWS``)."""
    counts: dict[str, int]
    """Matching records by status."""
    note: str | None
