"""``contreact similarity|corpus|search``: the reflections' similarity, the paragraph
corpus, and semantic search, all from the vectors in the run logs (the queries live
in ``corpus_queries``, imported when one of these commands runs)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from contreact_cli.args import add_command, bounded_int, experiment, run_id, text
from contreact_cli.exceptions import CLIError
from contreact_cli.output import out, print_json, warn
from contreact_cli.runs.records import load_state, skipped_line
from contreact_cli.settings import CLISettings
from contreact_cli.text import safe
from contreact_events.diversity.search_texts import KINDS

SEARCH_SKIPS = (
    "Without --run, a run whose log cannot be read (a quarantined run) is left out and "
    "named in a warning on stderr; the others are searched and the exit code stays 0."
)


def register(sub: Any) -> None:
    p = add_command(
        sub,
        "similarity",
        cmd_similarity,
        "a run's cycle-by-cycle reflection similarity matrix (from the log)",
        listing=True,
    )
    p.add_argument("run", type=run_id)
    p = add_command(
        sub,
        "corpus",
        cmd_corpus,
        "paragraph corpus of a run or an experiment: stats or clear",
        listing=True,
    )
    p.add_argument("action", choices=("stats", "clear"))
    p.add_argument("--run", type=run_id, help="the corpus of one run")
    p.add_argument(
        "--experiment", type=experiment, help="the corpus shared by an experiment's runs"
    )
    p = add_command(
        sub,
        "search",
        cmd_search,
        "search the runs' reflections, memory values, operator messages and tool outputs, "
        "by meaning (default) or --keyword",
        listing=True,
        epilog=SEARCH_SKIPS,
    )
    p.add_argument("text", type=text)
    p.add_argument("--k", type=bounded_int(1, 100), default=5, help="how many results (default 5)")
    p.add_argument("--run", type=run_id, help="only this run")
    p.add_argument(
        "--keyword",
        action="store_true",
        help="the words as written, in any case (no pattern), instead of by meaning",
    )
    p.add_argument(
        "--kind",
        action="append",
        choices=KINDS,
        help="only texts of this kind (repeat for several; default: all)",
    )


def cmd_similarity(args: argparse.Namespace, settings: CLISettings) -> int:
    """The cycle-by-cycle cosine similarity matrix, from the vectors in the log."""
    from contreact_events.diversity.similarity import similarity_matrix

    _events, state = asyncio.run(load_state(settings, args.run))
    cycles = [cycle for cycle, _ in state.embeddings]
    matrix = similarity_matrix([vector for _, vector in state.embeddings])
    if args.json:
        print_json({"run_id": args.run, "cycles": cycles, "matrix": matrix.round(6).tolist()})
        return 0
    if not cycles:
        out(f"run {args.run} has no embedded reflections")
        return 0
    out("cycle " + "".join(f"{c:>7}" for c in cycles))
    for cycle, row in zip(cycles, matrix, strict=True):
        out(f"{cycle:>5} " + "".join(f"{v:>7.3f}" for v in row))
    return 0


def cmd_corpus(args: argparse.Namespace, settings: CLISettings) -> int:
    from contreact_cli import corpus_queries

    if args.action == "clear":
        out(asyncio.run(corpus_queries.corpus_clear(settings, args.run, args.experiment)))
        return 0
    stats = asyncio.run(corpus_queries.corpus_stats(settings, args.run, args.experiment))
    if args.json:
        print_json(stats)
    else:
        out(
            f"corpus {stats['scope']}: {stats['total_chunks']} paragraph(s) of "
            f"{stats['total_documents']} accepted answer(s) from {len(stats['runs'])} run(s); "
            f"oldest {stats['oldest_timestamp'] or '-'}"
            + (f"; cleared at {stats['cleared_at']}" if stats["cleared_at"] else "")
        )
    return 0


def cmd_search(args: argparse.Namespace, settings: CLISettings) -> int:
    from contreact_cli import corpus_queries

    if not args.text.strip():  # (every text would rank, against nothing)
        raise CLIError("search: say what to look for: contreact search 'WORDS' [--keyword]")
    hits, skipped = asyncio.run(
        corpus_queries.search(
            settings, args.text, args.k, args.run, keyword=args.keyword, kinds=args.kind or ()
        )
    )
    for member, reason in skipped.items():
        warn(skipped_line(member, reason))
    if args.json:
        print_json(hits)
        return 0
    if not hits:
        out("nothing found" if args.keyword else "nothing to search: no texts yet")
    for hit in hits:
        kind = safe(hit["kind"], 80, one_line=True)
        score = "" if hit["score"] is None else f"{hit['score']:.3f}  "
        out(
            f"{score}{hit['run_id']} cycle {hit['cycle']} {kind}: "
            f"{safe(hit['text'], 120, one_line=True)}"
        )
    return 0
