"""Assessments of runs by evaluator models: the ratings frame, the cross-model PEI
matrix (the paper's Table 2) with its agreement statistics, the patterns grid with
Fleiss' kappa, and their plain-text and JSON forms.

    from contreact_analysis.assessments.frame import rated_runs, ratings_frame
    from contreact_analysis.assessments.matrix import build_matrix, matrix_json
    from contreact_analysis.assessments.render import render_matrix

    frame = ratings_frame(records, rated_runs(replica_entries))
    matrix = build_matrix(frame, experiment="paper-replication")
    print(render_matrix(matrix))         # contreact assess matrix EXP
    matrix_json(matrix)                  # contreact assess matrix EXP --json; the dashboard

The modules: ``columns`` (the frame's columns), ``frame`` (records to a frame),
``agreement`` (alpha, ICC, Spearman, Fleiss' kappa through their libraries), ``pei``
(the matrix), ``patterns`` (the label grid), ``paper`` (the paper's figures),
``results`` (the answers as pydantic models: importing them loads neither pandas nor
the statistics libraries), ``matrix`` (both together), ``render`` (plain text).
"""
