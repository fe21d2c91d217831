"""``contreact assess matrix EXP [--forks none|as-rows|only] [--json]``: the
experiment's cross-model matrix (the paper's Table 2) and its statistics, from every
assessment record of its replicas, and of its forks when asked
(``contreact_analysis.assessments``). The dashboard's Table 2 is the same object:
``--json`` prints what the compare page's JSON holds under ``assessments.matrix``.
Part of the ``assess`` group (``assess.py`` hands ``matrix`` over)."""

from __future__ import annotations

import asyncio

from contreact_cli.args import Parser
from contreact_cli.args import experiment as experiment_name
from contreact_cli.connection import redis_client
from contreact_cli.exceptions import CLIError
from contreact_cli.output import out, print_json
from contreact_cli.settings import CLISettings
from contreact_events.config.run_places import FORK_VIEWS


def matrix_parser() -> Parser:
    p = Parser(
        prog="contreact assess matrix",
        description="the cross-model matrix of an experiment's assessments, with its statistics",
    )
    p.add_argument("experiment", type=experiment_name, metavar="EXP")
    p.add_argument("--json", action="store_true", help="the matrix as JSON")
    p.add_argument(
        "--forks",
        choices=FORK_VIEWS,
        default="none",
        help="the experiment's forks: none (left out), as-rows (each a row 'A -> B at K'), "
        "only (default none)",
    )
    return p


def cmd_matrix(words: list[str], settings: CLISettings) -> int:
    args = matrix_parser().parse_args(words)
    # pandas and the statistics libraries load here, not with every command
    from contreact_analysis.assessments.experiment import experiment_matrix
    from contreact_analysis.assessments.matrix import matrix_json
    from contreact_analysis.assessments.render import render_matrix
    from contreact_analysis.assessments.results import AssessmentMatrix
    from contreact_analysis.exceptions import AnalysisError

    async def read() -> AssessmentMatrix:
        async with redis_client(settings) as redis:
            return await experiment_matrix(
                redis, settings.archive_dir, args.experiment, forks=args.forks
            )

    try:
        matrix = asyncio.run(read())
    except AnalysisError as exc:
        raise CLIError(str(exc)) from None
    if args.json:
        print_json(matrix_json(matrix))
        return 0
    for line in render_matrix(matrix).splitlines():
        out(line)
    return 0
