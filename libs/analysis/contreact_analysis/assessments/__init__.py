"""Assessments of runs by evaluator models: the ratings frame, the cross-model PEI
matrix (the paper's Table 2) with its agreement statistics, the patterns grid with
Fleiss' kappa, and their plain-text and JSON forms.

    frame = ratings_frame(records, rated_runs(replica_entries))
    matrix = build_matrix(frame, experiment="paper-replication")
    print(render_matrix(matrix))         # contreact assess matrix EXP
    matrix_json(matrix)                  # contreact assess matrix EXP --json; the dashboard
"""

from contreact_analysis.assessments.columns import COLUMNS, RATED, UNRATED_STATUSES
from contreact_analysis.assessments.frame import RatedRun, rated_runs, ratings_frame
from contreact_analysis.assessments.matrix import AssessmentMatrix, build_matrix, matrix_json
from contreact_analysis.assessments.paper import paper_ratings_frame, paper_table2
from contreact_analysis.assessments.patterns import PatternsGrid, patterns_grid
from contreact_analysis.assessments.pei import PEIMatrix, history_ratings, pei_matrix
from contreact_analysis.assessments.render import render_matrix

__all__ = [
    "COLUMNS",
    "RATED",
    "UNRATED_STATUSES",
    "AssessmentMatrix",
    "PEIMatrix",
    "PatternsGrid",
    "RatedRun",
    "build_matrix",
    "history_ratings",
    "matrix_json",
    "paper_ratings_frame",
    "paper_table2",
    "patterns_grid",
    "pei_matrix",
    "rated_runs",
    "ratings_frame",
    "render_matrix",
]
