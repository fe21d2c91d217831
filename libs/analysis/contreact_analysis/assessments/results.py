"""What the assessment statistics answer, as frozen pydantic models: the same objects
are the CLI's ``--json`` and the dashboard's JSON. Kept apart from the code that
computes them, so a reader of results (the dashboard's page models) imports neither
pandas nor the statistics libraries."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = [
    "Agreement",
    "AlphaResult",
    "AssessmentMatrix",
    "Cell",
    "EvaluatorSummary",
    "ICCResult",
    "IntervalOut",
    "KappaResult",
    "LeftOut",
    "PEIMatrix",
    "PaperReference",
    "PatternRow",
    "PatternsGrid",
    "SelfPreference",
    "SpearmanResult",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class AlphaResult(_Model):
    alpha: float | None
    units: int
    """Histories rated by at least two evaluators (the pairable ones)."""
    raters: int
    low: float | None = None
    high: float | None = None
    """Bootstrap 95% interval over histories (None when it cannot be estimated)."""
    resamples: int = 0
    method: str = "krippendorff.alpha, interval"
    interval_method: str = "BCa bootstrap over histories, nominal 95%"
    """Its coverage is below 95% over few histories (docs/architecture.md: about 75% over
    6 histories, 89% over 18, in a simulation)."""


class ICCResult(_Model):
    icc: float | None
    low: float | None
    high: float | None
    """pingouin's 95% interval (F distribution)."""
    targets: int
    """Histories rated by every evaluator (the only ones the model uses)."""
    raters: int
    kind: str
    """``ICC(2,1)`` or ``ICC(3,1)``."""
    method: str = "pingouin.intraclass_corr"
    interval_method: str = "F distribution"


class SpearmanResult(_Model):
    mean: float | None
    pairs: int
    """Pairs of evaluators with a defined correlation (the mean is over these)."""
    undefined_pairs: list[tuple[str, str]]
    """Pairs with fewer than three common histories or a constant rater."""
    rho: dict[str, float]
    """``"A|B"`` -> Spearman's rho of evaluators A and B."""
    method: str = "scipy.stats.spearmanr, pairwise complete"


class KappaResult(_Model):
    kappa: float | None
    subjects: int
    """Runs labelled by every evaluator (Fleiss' kappa needs as many raters for each)."""
    raters: int
    categories: list[str]
    method: str = "statsmodels.stats.inter_rater.fleiss_kappa"


class IntervalOut(_Model):
    """A mean's interval (``contreact_analysis.intervals.mean_interval``), or why there
    is none: then ``low`` and ``high`` are None and ``reason`` says it."""

    low: float | None
    high: float | None
    n: int
    confidence: float
    method: str
    """``t``: Student's t interval of the mean."""
    reason: str | None = None
    """Why there is no interval ("n = 2: too few histories for an interval")."""


class Cell(_Model):
    history: str
    evaluator: str
    mean: float | None
    n: int
    """Rated answers counted (over replicas and repeats)."""
    histories: int
    """Histories (replicas) with at least one rated answer."""
    unrated: dict[str, int]
    """Answers that are not ratings, by status (never averaged in)."""
    interval: IntervalOut | None
    self_rating: bool
    paper: float | None
    """The paper's Table 2 cell for the same labels, when the labels are the paper's."""
    read_by: dict[str, int] = {}
    """Rated answers by who read them: ``parser``, ``follow_up``, ``person``."""


class EvaluatorSummary(_Model):
    evaluator: str
    mean: float | None
    histories: int
    n: int
    unrated: int
    interval: IntervalOut | None
    paper_mean: float | None
    """The mean the paper's text states for this evaluator (same label)."""


class SelfPreference(_Model):
    evaluator: str
    index: float | None
    """Own rating minus the other evaluators' mean, averaged over its own histories."""
    self_mean: float | None
    others_mean: float | None
    histories: int
    interval: IntervalOut | None


class LeftOut(_Model):
    """The histories one evaluator gave no rating of: left out of every agreement
    statistic's units for that evaluator (alpha pairs what remains, ICC keeps only
    the histories every evaluator rated, Spearman the ones both of a pair rated)."""

    evaluator: str
    histories: int
    why: dict[str, int]
    """Status of its last answer on the history -> histories: unparseable, refused,
    off_scale, failed; ``no record`` where it has not answered at all."""


class Agreement(_Model):
    alpha: AlphaResult
    icc2: ICCResult
    icc3: ICCResult
    spearman: SpearmanResult
    histories: int = 0
    """Histories with an answer to the instrument (rated or not)."""
    left_out: list[LeftOut] = []
    """Per evaluator, the histories it left unrated and why (every evaluator listed)."""


class PaperReference(_Model):
    evaluators: list[str]
    histories: dict[str, list[float | None]]
    evaluator_means: dict[str, float]
    inter_rater_correlation: float | None
    """As the paper states it (it does not say which statistic)."""
    citation: str
    agreement_on_cells: Agreement | None = None
    """The same statistics on the paper's own Table 2 cells, each cell taken as one
    history (the columns the transcription kept): to set beside its 0.23."""


class PEIMatrix(_Model):
    instrument: str
    histories: list[str]
    """Row order: history models."""
    evaluators: list[str]
    """Column order: evaluators (the history models first, so the diagonal is one)."""
    cells: list[Cell]
    evaluator_summaries: list[EvaluatorSummary]
    self_preference: list[SelfPreference]
    agreement: Agreement
    ratings: int
    unrated: dict[str, int]
    paper: PaperReference
    resamples: int
    """Bootstrap resamples of Krippendorff's alpha's interval (the means' intervals
    are t intervals: no resampling)."""
    read_by: dict[str, int] = {}
    """Rated answers by who read them (the cells' counts summed)."""
    follow_up_cells: int = 0
    """Cells with at least one rating read by the follow-up (not the parser alone)."""
    person_cells: int = 0
    """Cells with at least one rating read by a person."""

    @property
    def reading_note(self) -> str:
        """Who read the ratings, in one sentence (the CLI, the dashboard, the report)."""
        parts = [f"{self.read_by.get('parser', 0)} by the parser"]
        if self.read_by.get("follow_up"):
            parts.append(
                f"{self.read_by['follow_up']} by the follow-up question "
                f"({self.follow_up_cells} of {len(self.cells)} cells rest on follow-ups)"
            )
        if self.read_by.get("person"):
            parts.append(f"{self.read_by['person']} by a person ({self.person_cells} cells)")
        return f"Ratings read {', '.join(parts)}."

    def cell(self, history: str, evaluator: str) -> Cell | None:
        return next(
            (c for c in self.cells if c.history == history and c.evaluator == evaluator), None
        )

    @property
    def diagonal(self) -> list[Cell]:
        return [c for c in self.cells if c.self_rating]


class PatternRow(_Model):
    run_id: str
    history: str
    replica: str
    paper_label: str | None
    """The paper's label for the run of the same model label and replica (``GPT5-A``)."""
    labels: dict[str, str | None]
    """Evaluator -> its label (None: no rated answer)."""
    unrated: dict[str, str]
    """Evaluator -> why it gave no label (the last unrated answer's status)."""
    agree_with_paper: int
    """Evaluators whose label is the paper's."""


class PatternsGrid(_Model):
    instrument: str
    evaluators: list[str]
    categories: list[str]
    rows: list[PatternRow]
    kappa: KappaResult
    ratings: int
    unrated: dict[str, int]


class AssessmentMatrix(_Model):
    experiment: str | None
    runs: int
    """Rated runs (histories) in the frame."""
    records: int
    pei: PEIMatrix | None
    """None when no run has a PEI answer."""
    patterns: PatternsGrid | None
    """None when no run has a patterns answer."""
    forks: str = "none"
    """How the experiment's forks are counted: ``none`` (left out), ``as-rows`` (each a
    row of its own, ``A -> B at K``), ``only``."""
    left_out: list[str] = []
    """What the matrix leaves out, one line each (earlier attempts, forks, forks made
    outside the experiment's file)."""
