"""Answer reading: how the parser reads the corpus of evaluator answers
(``tests/fixtures/answers/``), and what reading costs.

Prints, for the PEI scale and the patterns rubric:
* the confusion table: what a careful reader gives each answer (rows: ``rated N``,
  ``refused``, ``unparseable``) against what the parser records (columns);
* the wrong values (a committed answer rated with another value), the false ratings
  (an answer that commits to none, rated), and the share of committed answers read;
* the time to parse an answer against the time to normalize it
  (``answer_text.bounded`` + ``for_matching``, the floor every reading starts from),
  medians over the corpus in the same run; and the same for a hostile answer of 200
  level mentions in 16 kB (the most the parser reads).

Targets (issue 27): no wrong value and no false rating; at least 95% of the committed
answers read by the parser alone; a parse at most ``TARGET_RATIO`` times its
normalization on the corpus.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial

from bench._support import header, ratio, ratio_verdict, row, smoke_args, use_smoke_sizes, verdict
from contreact_events.instruments import load_instrument, parse_answer
from contreact_events.instruments.answer_text import bounded, for_matching
from tests.support.answer_corpus import INSTRUMENTS, CorpusAnswer, Score, load, score

REPEATS = 7
SAMPLE = 0
"""Answers of each corpus read (0: all)."""
TARGET_READ = 0.95
TARGET_RATIO = 30.0
HOSTILE = "level 2, " * 200 + "x" * 14_000


def per_answer(fns: list[Callable[[str], object]], answers: list[str]) -> list[float]:
    """For each of ``fns``: the median over ``REPEATS`` of its mean time per answer
    (seconds), the functions measured in turn within each repeat, so that a change of
    load hits each alike."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(REPEATS):
        for fn, times in zip(fns, samples, strict=True):
            t = time.perf_counter()
            for answer in answers:
                fn(answer)
            times.append((time.perf_counter() - t) / len(answers))
    return [statistics.median(times) for times in samples]


def normalized(raw: str) -> str:
    return for_matching(bounded(raw)[0])


def short(cell: str) -> str:
    """A label's key by its initials ("rated recursive_conceptualization" is "rated rc")."""
    name, _, value = cell.partition(" ")
    if "_" not in value:
        return cell
    return f"{name} {''.join(word[0] for word in value.split('_'))}"


def confusion_table(result: Score) -> None:
    """Rows: the careful reader's reading; columns: the parser's (counts)."""

    def order(cell: str) -> tuple[int, str]:
        name, _, value = cell.partition(" ")
        rank = {"rated": 0, "off_scale": 1, "refused": 2, "unparseable": 3}[name]
        return rank, value.zfill(3) if value.isdigit() else value

    rows = sorted({short(e) for e, _ in result.confusion}, key=order)
    columns = sorted({short(p) for _, p in result.confusion}, key=order)
    counts = {(short(e), short(p)): n for (e, p), n in result.confusion.items()}
    width = max(len(c) for c in rows + columns) + 2
    print("   " + "expected \\ parsed".ljust(width) + "".join(c.rjust(width) for c in columns))
    for expected in rows:
        cells = (counts.get((expected, parsed), 0) for parsed in columns)
        line = "".join((str(n) if n else ".").rjust(width) for n in cells)
        print("   " + expected.ljust(width) + line)


def read_corpus(instrument: str) -> tuple[Score, list[CorpusAnswer]]:
    answers = load(instrument)
    if SAMPLE:
        answers = answers[:: max(1, len(answers) // SAMPLE)][:SAMPLE]
    return score(instrument, answers), answers


def report(instrument: str) -> tuple[int, float, float]:
    """Print the reading of one corpus and its cost; (wrong values and false ratings,
    share of committed answers read, parse / normalization)."""
    result, answers = read_corpus(instrument)
    print(f"\n   {instrument}: {result.answers} answers, {result.committed} committed")
    confusion_table(result)
    row(f"{instrument}: wrong values", len(result.wrong), "answers", ", ".join(result.wrong))
    row(f"{instrument}: false ratings", len(result.false), "answers", ", ".join(result.false))
    row(
        f"{instrument}: committed and read",
        100 * result.read_share,
        "%",
        f"({result.read}/{result.committed}; missed: {', '.join(result.missed) or 'none'})",
    )
    parse = partial(parse_answer, load_instrument(instrument))
    parse(HOSTILE)  # its patterns are compiled once per process: not what is measured
    texts = [a.answer for a in answers]
    floor, parsed = per_answer([normalized, parse], texts)
    row(f"{instrument}: normalization per answer", floor * 1e6, "us")
    row(f"{instrument}: parse per answer", parsed * 1e6, "us")
    cost = ratio(f"{instrument}: parse / normalization", parsed, floor)
    if instrument == "pei":
        floor, parsed = per_answer([normalized, parse], [HOSTILE])
        row("pei: 200 mentions in 16 kB, parse", parsed * 1e3, "ms")
        ratio("pei: 200 mentions, parse / normalization", parsed, floor)
    return len(result.wrong) + len(result.false), result.read_share, cost


def main(argv: list[str] | None = None) -> None:
    args = smoke_args(argv, prog="python -m bench.research.answer_reading")
    header("answer reading: the corpus's confusion table, and the cost of a parse")
    if args.smoke:
        use_smoke_sizes(globals(), REPEATS=1, SAMPLE=20)
    readings = {instrument: report(instrument) for instrument in INSTRUMENTS}
    failures = sum(r[0] for r in readings.values())
    least = min(r[1] for r in readings.values())
    cost = readings["pei"][2]
    print()
    verdict(
        "no wrong value, no false rating",
        failures == 0,
        f"{failures} answers rated with a value they do not commit to (target 0)",
        value=failures,
        unit="answers",
        target="0",
    )
    verdict(
        "committed answers read by the parser alone",
        least >= TARGET_READ,
        f"{least:.1%} at least (target >= {TARGET_READ:.0%})",
        value=least * 100,
        unit="%",
        target=f">= {TARGET_READ:.0%}",
    )
    ratio_verdict(
        "cost of a parse",
        cost,
        TARGET_RATIO,
        f"{cost:.1f}x the normalization of the same answers (target <= {TARGET_RATIO:.0f}x)",
        target=f"<= {TARGET_RATIO:.0f}x",
    )


if __name__ == "__main__":
    main()
