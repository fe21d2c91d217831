"""The matrix as plain text for a terminal (``contreact assess matrix EXP``): Table 2
with n per cell, each evaluator's mean with its interval (named by its method, or why
there is none) beside the paper's, the self-preference index, the agreement statistics
with the histories each evaluator left out as unrated, the paper's own table, and the
patterns grid. Names come from configs: they are neutralised as everywhere
(``contreact_events.untrusted_text``) and put on one line."""

from __future__ import annotations

from collections.abc import Sequence

from contreact_analysis.assessments.results import (
    Agreement,
    AssessmentMatrix,
    IntervalOut,
    PatternsGrid,
    PEIMatrix,
)
from contreact_events.untrusted_text import display, shorten

__all__ = ["render_matrix"]

WIDTH = 24


def _name(text: str, width: int = WIDTH) -> str:
    return shorten(" ".join(display(text).split()), width)


def _num(value: float | None, digits: int = 1, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _interval(found: IntervalOut | None, digits: int = 1) -> str:
    """`` [low, high] (95% t)``, or `` (no interval: n = 2: too few histories ...)``."""
    if found is None:
        return ""
    if found.low is None or found.high is None:
        return f" (no interval: {found.reason})" if found.reason else ""
    return (
        f" [{_num(found.low, digits)}, {_num(found.high, digits)}]"
        f" ({found.confidence:.0%} {found.method})"
    )


def _bounds(found: IntervalOut | None, digits: int = 2) -> str:
    """A table cell: ``[low, high]``, or ``*`` pointing to the reason below the table."""
    if found is None:
        return ""
    if found.low is None or found.high is None:
        return "*" if found.reason else ""
    return f"[{_num(found.low, digits)}, {_num(found.high, digits)}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines


def render_matrix(matrix: AssessmentMatrix) -> str:
    title = f"experiment {_name(matrix.experiment, 48)}" if matrix.experiment else "these runs"
    lines = [f"Assessments of {title}: {matrix.runs} run(s), {matrix.records} record(s)"]
    lines += [f"({_name(note, 400)})" for note in matrix.left_out]
    if matrix.pei is None and matrix.patterns is None:
        lines.append("no assessment recorded yet (`contreact assess --experiment EXP` makes them)")
    if matrix.pei is not None:
        lines += ["", *_pei(matrix.pei)]
    if matrix.patterns is not None:
        lines += ["", *_patterns(matrix.patterns)]
    return "\n".join(lines) + "\n"


def _pei(pei: PEIMatrix) -> list[str]:
    lines = [
        "PEI: mean rating (1-10) of each model's histories (rows) by each evaluator (columns);",
        "n = rated answers; * = a model rating its own histories; !k = k answers not ratings",
        "",
    ]
    header = ["history \\ evaluator", *(_name(e) for e in pei.evaluators)]
    rows = []
    for history in pei.histories:
        row = [_name(history)]
        for evaluator in pei.evaluators:
            cell = pei.cell(history, evaluator)
            if cell is None:
                row.append("")
                continue
            text = f"{_num(cell.mean)} n={cell.n}" if cell.n else "-"
            if cell.self_rating:
                text += "*"
            unrated = sum(cell.unrated.values())
            if unrated:
                text += f" !{unrated}"
            row.append(text)
        rows.append(row)
    summaries = {s.evaluator: s for s in pei.evaluator_summaries}
    rows.append(["evaluator mean", *(_num(summaries[e].mean, 2) for e in pei.evaluators)])
    methods = sorted({s.interval.method for s in summaries.values() if s.interval is not None})
    rows.append(
        [
            f"  95% {'/'.join(methods)} interval",
            *(_bounds(summaries[e].interval) for e in pei.evaluators),
        ]
    )
    rows.append(["  paper's mean", *(_num(summaries[e].paper_mean) for e in pei.evaluators)])
    lines += _table(header, rows)
    for e in pei.evaluators:
        found = summaries[e].interval
        if found is not None and found.low is None and found.reason:
            lines.append(f"  * {_name(e)}: no interval: {found.reason}")
    if pei.self_preference:
        lines += ["", "Self-preference (own rating minus the others' mean on its own histories):"]
        for sp in pei.self_preference:
            lines.append(
                f"  {_name(sp.evaluator)}: {_num(sp.index, 2, signed=True)}"
                f"{_interval(sp.interval, 2)} over {sp.histories} history(ies)"
                f" (own {_num(sp.self_mean, 2)}, others {_num(sp.others_mean, 2)})"
            )
    a = pei.agreement
    alpha_interval = (
        f" [{_num(a.alpha.low, 2)}, {_num(a.alpha.high, 2)}] ({a.alpha.interval_method})"
        if a.alpha.low is not None
        else ""
    )
    lines += [
        "",
        "Agreement between evaluators:",
        f"  Krippendorff's alpha (interval): {_num(a.alpha.alpha, 3)}{alpha_interval}"
        f" over {a.alpha.units} history(ies), {a.alpha.raters} evaluator(s)",
    ]
    for result in (a.icc2, a.icc3):
        interval = (
            f" [{_num(result.low, 2)}, {_num(result.high, 2)}] (95%, {result.interval_method})"
            if result.icc is not None
            else ""
        )
        lines.append(
            f"  {result.kind}: {_num(result.icc, 3)}{interval}"
            f" over {result.targets} history(ies) rated by every evaluator"
        )
    undefined = len(a.spearman.undefined_pairs)
    lines.append(
        f"  mean pairwise Spearman: {_num(a.spearman.mean, 3)} over {a.spearman.pairs} pair(s)"
        + (
            f" ({undefined} pair(s) undefined: constant or < 3 common histories)"
            if undefined
            else ""
        )
    )
    lines += _left_out(a)
    lines.append(f"  (paper: inter-rater correlation {pei.paper.inter_rater_correlation})")
    on_cells = pei.paper.agreement_on_cells
    if on_cells is not None:
        lines.append(
            "  (the same on the paper's Table 2 cells:"
            f" alpha {_num(on_cells.alpha.alpha, 2)},"
            f" ICC(2,1) {_num(on_cells.icc2.icc, 2)}, ICC(3,1) {_num(on_cells.icc3.icc, 2)},"
            f" mean Spearman {_num(on_cells.spearman.mean, 2)})"
        )
    misses = ", ".join(f"{k} {v}" for k, v in pei.unrated.items()) or "none"
    lines += ["", f"Rated answers: {pei.ratings}; not ratings (never averaged in): {misses}"]
    lines.append(pei.reading_note)
    lines += ["", f"The paper's Table 2 ({pei.paper.citation}):"]
    paper_rows = [[h, *(_num(v) for v in values)] for h, values in pei.paper.histories.items()]
    paper_rows.append(
        ["stated mean", *(_num(pei.paper.evaluator_means.get(e)) for e in pei.paper.evaluators)]
    )
    lines += _table(["history \\ evaluator", *pei.paper.evaluators], paper_rows)
    return lines


def _left_out(agreement: Agreement) -> list[str]:
    """The histories each evaluator gave no rating of, left out of the statistics above."""
    missing = [x for x in agreement.left_out if x.histories]
    if not missing:
        return [f"  left out as unrated: none (every evaluator rated all {agreement.histories})"]
    lines = [f"  left out as unrated, of {agreement.histories} history(ies):"]
    for x in missing:
        why = ", ".join(f"{status} {k}" for status, k in x.why.items())
        lines.append(f"    {_name(x.evaluator)}: {x.histories} ({why})")
    return lines


def _patterns(grid: PatternsGrid) -> list[str]:
    short = {c: "".join(w[0] for w in c.split("_")).upper() for c in grid.categories}
    legend = ", ".join(f"{v} = {k}" for k, v in short.items())
    lines = [f"Patterns: each evaluator's label per run ({legend}); paper = the paper's own", ""]
    header = ["run", *(_name(e) for e in grid.evaluators), "paper"]
    rows = []
    for row in grid.rows:
        cells = []
        for evaluator in grid.evaluators:
            label = row.labels.get(evaluator)
            cells.append(
                short.get(label, _name(label, 12)) if label else row.unrated.get(evaluator, "-")
            )
        paper = short.get(row.paper_label, "") if row.paper_label else ""
        rows.append([_name(row.run_id, 48), *cells, paper])
    lines += _table(header, rows)
    k = grid.kappa
    unrated = ", ".join(f"{s} {n}" for s, n in grid.unrated.items()) or "none"
    lines += [
        "",
        f"Fleiss' kappa: {_num(k.kappa, 3)} over {k.subjects} run(s) labelled by all"
        f" {k.raters} evaluator(s)",
        f"Labels: {grid.ratings}; not labels: {unrated}",
    ]
    return lines
