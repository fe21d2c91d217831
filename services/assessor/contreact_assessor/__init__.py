"""The assessor: rq jobs that have evaluator models rate finished runs."""
