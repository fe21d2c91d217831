"""Errors of the assessor."""

from __future__ import annotations


class AssessorError(Exception):
    """Base class of every error raised by contreact_assessor."""


class RatingImpossible(AssessorError):
    """The rating cannot be made as asked, and trying again will not change that (the
    run has not ended, its log cannot be read, the evaluator is not runnable): it is
    recorded as ``AssessmentFailed`` at once, without retries."""


class EvaluatorCallFailed(AssessorError):
    """The evaluator call failed in a way another attempt may not (the LLM worker
    answered a transient failure, or nothing within the wait): rq retries the job."""
