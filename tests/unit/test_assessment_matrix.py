"""The PEI matrix of a ratings frame: cells, n, unrated answers counted and never
averaged in, the diagonal, evaluator means, self-preference, intervals; the patterns
grid; the paper's own Table 2 reproducing the evaluator means its text states; and the
plain-text and JSON forms."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from contreact_analysis.assessments.columns import ratings_from_rows
from contreact_analysis.assessments.matrix import build_matrix, matrix_json
from contreact_analysis.assessments.paper import paper_ratings_frame, paper_table2
from contreact_analysis.assessments.render import render_matrix
from contreact_analysis.assessments.results import AssessmentMatrix

RESAMPLES = 999


def rating(
    run: str, evaluator: str, value: float | None, status: str = "rated", repeat: int = 1
) -> dict[str, Any]:
    model, replica = run.split("-")
    return {
        "run_id": f"exp-{run}",
        "history_model": model,
        "replica": replica,
        "evaluator": evaluator,
        "evaluator_model": f"m/{evaluator}",
        "instrument": "pei",
        "repeat": repeat,
        "status": status,
        "value": value,
        "raw": f"Level {value}" if value is not None else "I cannot say",
    }


FRAME_ROWS = [
    rating("A-A", "A", 6), rating("A-A", "B", 2), rating("A-A", "C", 4),
    rating("A-B", "A", 8), rating("A-B", "B", 4), rating("A-B", "B", 6, repeat=2),
    rating("A-B", "C", None, "unparseable"),
    rating("B-A", "A", 1), rating("B-A", "B", 3), rating("B-A", "C", 2),
    rating("B-B", "A", 3), rating("B-B", "B", 5), rating("B-B", "C", None, "refused"),
    rating("B-B", "C", 4, repeat=2),
]  # fmt: skip
"""Per history (mean over repeats): A-A: A 6, B 2, C 4; A-B: A 8, B 5 (4 and 6), C none
(unparseable); B-A: A 1, B 3, C 2; B-B: A 3, B 5, C 4 (repeat 1 refused)."""


@pytest.fixture(scope="module")
def matrix() -> AssessmentMatrix:
    return build_matrix(ratings_from_rows(FRAME_ROWS), experiment="exp", resamples=RESAMPLES)


def test_cells_are_means_over_histories_with_n_and_unrated_counted(
    matrix: AssessmentMatrix,
) -> None:
    pei = matrix.pei
    assert pei.histories == ["A", "B"]
    assert pei.evaluators == ["A", "B", "C"]  # history models first: the diagonal is one
    expected = {
        ("A", "A"): (7.0, 2, 2, {}),
        ("A", "B"): (3.5, 3, 2, {}),  # (2 + mean(4, 6)) / 2, three answers
        ("A", "C"): (4.0, 1, 1, {"unparseable": 1}),  # the unparseable one is not a 0
        ("B", "A"): (2.0, 2, 2, {}),
        ("B", "B"): (4.0, 2, 2, {}),
        ("B", "C"): (3.0, 2, 2, {"refused": 1}),
    }
    for (history, evaluator), (mean, n, histories, unrated) in expected.items():
        cell = pei.cell(history, evaluator)
        assert (cell.mean, cell.n, cell.histories, cell.unrated) == (mean, n, histories, unrated)
    assert [(c.history, c.mean) for c in pei.diagonal] == [("A", 7.0), ("B", 4.0)]
    assert pei.ratings == 12
    assert pei.unrated == {"unparseable": 1, "refused": 1}


def test_evaluator_means_and_self_preference_by_hand(matrix: AssessmentMatrix) -> None:
    """A: (6 + 8 + 1 + 3) / 4 = 4.5; B: (2 + 5 + 3 + 5) / 4 = 3.75; C: (4 + 2 + 4) / 3.
    Self-preference of A on A-A: 6 - (2 + 4) / 2 = 3, on A-B: 8 - 5 = 3 -> 3;
    of B on B-A: 3 - (1 + 2) / 2 = 1.5, on B-B: 5 - (3 + 4) / 2 = 1.5 -> 1.5."""
    summaries = {s.evaluator: s for s in matrix.pei.evaluator_summaries}
    assert summaries["A"].mean == 4.5 and summaries["A"].histories == 4
    assert summaries["B"].mean == 3.75 and summaries["B"].n == 5
    assert summaries["C"].mean == pytest.approx(10 / 3) and summaries["C"].unrated == 2
    preference = {s.evaluator: s for s in matrix.pei.self_preference}
    assert set(preference) == {"A", "B"}  # C rated no history of its own
    assert (preference["A"].index, preference["A"].self_mean, preference["A"].others_mean) == (
        3.0,
        7.0,
        4.0,
    )
    assert preference["B"].index == 1.5 and preference["B"].histories == 2


def test_intervals_are_over_histories_and_say_why_when_there_is_none(
    matrix: AssessmentMatrix,
) -> None:
    """A's ratings of the four histories: 6, 8, 1, 3 (mean 4.5, SD sqrt(29 / 3)): the t
    interval 4.5 -+ 3.182446 x SD / 2 (t at 0.975 with 3 degrees of freedom)."""
    summary = next(s for s in matrix.pei.evaluator_summaries if s.evaluator == "A")
    found = summary.interval
    assert found is not None and found.n == 4 and found.method == "t" and found.reason is None
    half = 3.182446 * math.sqrt(29 / 3) / 2
    assert (found.low, found.high) == (
        pytest.approx(4.5 - half, abs=1e-5),
        pytest.approx(4.5 + half, abs=1e-5),
    )
    one = matrix.pei.cell("A", "C").interval
    assert one is not None and (one.low, one.high) == (None, None)
    assert one.reason == "n = 1: too few histories for an interval"
    two = matrix.pei.cell("A", "A").interval
    assert two is not None and two.reason == "n = 2: too few histories for an interval"
    constant = next(s for s in matrix.pei.self_preference if s.evaluator == "A").interval
    assert constant is not None and constant.low is None
    assert constant.reason == "n = 2: too few histories for an interval"


def test_a_constant_sample_has_no_interval() -> None:
    rows = [rating(f"A-{r}", "B", 3) for r in "ABC"] + [rating("A-A", "A", 5)]
    matrix = build_matrix(ratings_from_rows(rows), resamples=0)
    cell = matrix.pei.cell("A", "B")
    assert cell.interval is not None and cell.interval.low is None
    assert cell.interval.reason == "n = 3: every value is 3, no spread to estimate an interval"
    text = render_matrix(matrix)  # the means' row points to the reason under the table
    assert "  * B: no interval: n = 3: every value is 3, no spread" in text


def test_agreement_says_which_histories_each_evaluator_left_out(
    matrix: AssessmentMatrix,
) -> None:
    """C's answer on A-B was unparseable: that history is left out of C's column (alpha
    pairs the rest, ICC drops the history, Spearman drops it from C's pairs)."""
    agreement = matrix.pei.agreement
    assert agreement.histories == 4
    left = {x.evaluator: (x.histories, x.why) for x in agreement.left_out}
    assert left == {"A": (0, {}), "B": (0, {}), "C": (1, {"unparseable": 1})}
    rows = [
        rating("X-A", "P", 2), rating("X-B", "P", 4), rating("X-C", "P", 6),
        rating("X-A", "Q", 3), rating("X-B", "Q", None, "failed"),
        rating("X-C", "Q", None, "unparseable"), rating("X-C", "Q", None, "refused", repeat=2),
        rating("X-A", "R", 5), rating("X-C", "R", None, "off_scale"),
    ]  # fmt: skip
    other = build_matrix(ratings_from_rows(rows), resamples=0).pei
    left = {x.evaluator: (x.histories, x.why) for x in other.agreement.left_out}
    assert left == {
        "P": (0, {}),
        "Q": (2, {"refused": 1, "failed": 1}),  # X-C: its last answer was a refusal
        "R": (2, {"off_scale": 1, "no record": 1}),  # it never answered on X-B
    }
    assert other.agreement.icc2.targets == 1  # only X-A was rated by all three
    text = render_matrix(
        AssessmentMatrix(experiment=None, runs=3, records=9, pei=other, patterns=None)
    )
    assert "left out as unrated, of 3 history(ies):" in text
    assert "Q: 2 (refused 1, failed 1)" in text and "R: 2 (off_scale 1, no record 1)" in text


def test_agreement_counts_what_each_statistic_can_use(matrix: AssessmentMatrix) -> None:
    agreement = matrix.pei.agreement
    assert agreement.alpha.units == 4 and agreement.alpha.raters == 3
    assert agreement.icc2.targets == 3  # A-B has no rating by C
    assert agreement.spearman.pairs + len(agreement.spearman.undefined_pairs) == 3
    assert agreement.alpha.alpha is not None and -1 <= agreement.alpha.alpha <= 1


def test_the_paper_table_reproduces_the_evaluator_means_its_text_states() -> None:
    """Table 2's cells, each as one history, give each evaluator's mean over the six
    history models: the text's 1.6, 2.2, 3.7, 5.6, 6.1 for the five complete columns
    (Sonnet's column lost its digits in the transcription)."""
    table = paper_table2()
    matrix = build_matrix(paper_ratings_frame(), resamples=RESAMPLES)
    means = {s.evaluator: s.mean for s in matrix.pei.evaluator_summaries}
    complete = [
        e
        for e in table.evaluators
        if None not in [r[table.evaluators.index(e)] for r in table.histories.values()]
    ]
    assert complete == ["GPT5", "O3", "Grok", "Opus", "Gemini"]
    assert {e: round(means[e] or 0, 1) for e in complete} == {
        "GPT5": 1.6, "O3": 2.2, "Grok": 3.7, "Opus": 5.6, "Gemini": 6.1,
    }  # fmt: skip
    assert {e: table.evaluator_means[e] for e in complete} == {
        e: round(means[e] or 0, 1) for e in complete
    }
    assert all(s.histories == 6 for s in matrix.pei.evaluator_summaries)
    cell = matrix.pei.cell("Sonnet", "Grok")
    assert cell.mean == cell.paper == 9.3  # our cell beside the paper's, same labels
    # the statistics on the paper's cells, beside its unnamed "0.23" (the figures
    # assessments/paper.py quotes; the statistics themselves are checked above against
    # published examples): 6 histories (one per cell row) x 5 evaluators
    on_cells = matrix.pei.paper.agreement_on_cells
    assert (on_cells.alpha.units, on_cells.alpha.raters, on_cells.icc2.targets) == (6, 5, 6)
    figures = [
        on_cells.alpha.alpha,
        matrix.pei.agreement.alpha.alpha,
        on_cells.icc2.icc,
        on_cells.icc3.icc,
        on_cells.spearman.mean,
    ]
    assert [round(x or 0, 2) for x in figures] == [0.26, 0.26, 0.35, 0.57, 0.64]
    assert [round(x or 0, 3) for x in figures] == [0.260, 0.260, 0.346, 0.570, 0.644]
    assert on_cells.histories == 6 and all(
        x.histories == 0 for x in on_cells.left_out if x.evaluator != "Sonnet"
    )  # every cell kept; Sonnet's column lost its digits in the transcription
    assert on_cells.spearman.pairs == 10


def test_patterns_grid_shows_the_paper_label_and_kappa() -> None:
    def label(
        run: str, evaluator: str, value: str | None, status: str = "rated", repeat: int = 1
    ) -> dict[str, Any]:
        row = rating(run, evaluator, None, status, repeat)
        row.update(instrument="patterns", label=value, status=status)
        return row

    rows = [
        label("GPT5-A", "GPT5", "systematic_production"),
        label("GPT5-A", "Opus", "systematic_production"),
        label("Opus-A", "GPT5", "methodological_self_inquiry"),
        label("Opus-A", "Opus", "recursive_conceptualization"),
        label("Opus-B", "GPT5", "recursive_conceptualization"),
        label("Opus-B", "Opus", None, "unparseable"),
        label("Opus-B", "Opus", "recursive_conceptualization", repeat=2),
        label("Opus-C", "GPT5", None, "refused"),
        label("Opus-C", "Opus", "recursive_conceptualization"),
    ]
    grid = build_matrix(ratings_from_rows(rows)).patterns
    assert [r.run_id for r in grid.rows] == ["exp-GPT5-A", "exp-Opus-A", "exp-Opus-B", "exp-Opus-C"]
    by_run = {r.run_id: r for r in grid.rows}
    assert by_run["exp-GPT5-A"].paper_label == "systematic_production"
    assert by_run["exp-GPT5-A"].agree_with_paper == 2
    assert by_run["exp-Opus-B"].labels == {
        "GPT5": "recursive_conceptualization",
        "Opus": "recursive_conceptualization",
    }
    assert by_run["exp-Opus-C"].labels["GPT5"] is None
    assert by_run["exp-Opus-C"].unrated == {"GPT5": "refused"}
    # 3 runs labelled by both; P_i = (1, 0, 1) -> 2/3; p = (2, 1, 3) / 6 -> P_e = 14/36
    assert grid.kappa.subjects == 3
    assert grid.kappa.kappa == pytest.approx((2 / 3 - 14 / 36) / (1 - 14 / 36))
    assert grid.unrated == {"unparseable": 1, "refused": 1}
    assert "Fleiss' kappa: 0.455 over 3 run(s)" in render_matrix(
        build_matrix(ratings_from_rows(rows))
    )


def test_render_and_json(matrix: AssessmentMatrix) -> None:
    text = render_matrix(matrix)
    assert "Assessments of experiment exp: 4 run(s), 14 record(s)" in text
    assert "7.0 n=2*" in text  # A on its own histories, marked
    assert "4.0 n=1 !1" in text  # C on A's: one answer was not a rating
    assert (
        "A: +3.00 (no interval: n = 2: too few histories for an interval) over 2 history(ies)"
        " (own 7.00, others 4.00)"
    ) in text
    means_row = next(line for line in text.splitlines() if "95% t interval" in line)
    assert "[-0.45, 9.45]" in means_row  # A's mean, the row naming the method
    assert "left out as unrated, of 4 history(ies):" in text and "C: 1 (unparseable 1)" in text
    assert "ICC(2,1): " in text and "Krippendorff's alpha (interval): " in text
    assert "(BCa bootstrap over histories, nominal 95%)" in text  # it covers less
    assert "(95%, F distribution) over 3 history(ies)" in text  # ICC's, named
    assert "not ratings (never averaged in): unparseable 1, refused 1" in text
    assert "The paper's Table 2" in text and "stated mean" in text
    data = json.loads(json.dumps(matrix_json(matrix)))
    assert data["pei"]["cells"][0] | {"interval": None} == {
        "history": "A", "evaluator": "A", "mean": 7.0, "n": 2, "histories": 2, "unrated": {},
        "interval": None, "self_rating": True, "paper": None, "read_by": {},
    }  # fmt: skip
    assert data["patterns"] is None


def test_render_neutralizes_control_characters_in_names() -> None:
    rows = [dict(rating("A-A", "A", 5), evaluator="evil\x1b[2J\u202e"), rating("A-A", "A", 4)]
    text = render_matrix(build_matrix(ratings_from_rows(rows), resamples=RESAMPLES))
    assert "\x1b" not in text and "\u202e" not in text and "[2J" not in text
    assert "evil\ufffd" in text


def test_no_records_says_how_to_make_them() -> None:
    text = render_matrix(build_matrix(ratings_from_rows([])))
    assert "no assessment recorded yet" in text
