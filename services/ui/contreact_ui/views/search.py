"""Search over the agents' texts: reflections, memory values, messages to the operator
and replies, tool outputs (the ``texts`` table, which the projector fills with
``contreact_events.diversity.search_texts``, as ``contreact search`` reads them).

Keyword: the query is a literal text, case folded, looked up in the trigram index of
the folded copies (SQLite FTS5, the query one quoted string) or, shorter than three
characters, found with ``instr`` in each; every hit shown is matched again in Python.
Never a pattern: no regex, no LIKE wildcards, no FTS operators.
Semantic: the query embedded with the embedder's model (as ``contreact search``
does), ranked against the vectors the logs hold (reflections) and the others embedded
here on demand (``semantic.py`` keeps them for the next query).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from contreact_events.diversity.search_texts import (
    KIND_LABELS,
    KINDS,
    SearchText,
    fold_case,
    keyword_match,
    semantic_ranking,
)
from contreact_ui.exceptions import BadQuery
from contreact_ui.models.research import SearchFilters, SearchHit, SearchPage
from contreact_ui.semantic import TextEmbedder, Vector

SNIPPET_CHARS = 80
TRIGRAM = 3
"""The index finds texts by their three-character pieces: shorter queries scan."""
SEMANTIC_PREVIEW_CHARS = 240


def search_page(
    conn: sqlite3.Connection, filters: SearchFilters, embedder: TextEmbedder | None = None
) -> SearchPage:
    if "\x00" in filters.q:  # SQLite's FTS5 ends a phrase there (it answered 500)
        raise BadQuery("q: a NUL character cannot be searched for: remove it from the text")
    unknown = [k for k in filters.kind if k not in KINDS]
    if unknown:
        raise BadQuery(f"kind={unknown[0]!r}: search {', '.join(KINDS)} (or leave it out)")
    where, args = _scope(filters)
    runs, searched = conn.execute(  # from the index texts_kind, not the texts
        f"SELECT count(DISTINCT run_id), count(*) FROM texts t INDEXED BY texts_kind {where}",
        args,
    ).fetchone()
    if not filters.q.strip():
        hits: list[SearchHit] = []
        total = 0
    elif filters.mode == "keyword":
        hits, total = _keyword(conn, filters, where, args)
    else:
        if embedder is None:
            raise BadQuery("semantic search is not available here: search by keyword")
        hits = _semantic(conn, filters, where, args, embedder)
        total = len(hits)
    return SearchPage(
        filters=filters, hits=hits, total=total, searched=searched, runs=runs, kinds=KIND_LABELS
    )


def _scope(filters: SearchFilters) -> tuple[str, list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    if filters.kind:
        where.append(f"t.kind IN ({', '.join('?' * len(filters.kind))})")
        args += filters.kind
    if filters.run:
        where.append("t.run_id = ?")
        args.append(filters.run)
    if filters.experiment:
        where.append("t.run_id IN (SELECT run_id FROM runs WHERE experiment = ?)")
        args.append(filters.experiment)
    return (f"WHERE {' AND '.join(where)}" if where else ""), args


def _keyword(
    conn: sqlite3.Connection, filters: SearchFilters, where: str, args: list[Any]
) -> tuple[list[SearchHit], int]:
    """The folded copies are found through their trigram index (``text_index``, FTS5),
    or scanned for a query shorter than a trigram; the texts are read for the page's
    hits alone, and each is matched again exactly (``keyword_match``)."""
    folded = fold_case(filters.q)
    if len(folded) >= TRIGRAM:  # the index: the texts that hold every trigram in order
        source = "text_folds t"  # IN: the index is asked once, not once per row
        clause = f"{where} AND" if where else "WHERE"
        clause += " t.id IN (SELECT rowid FROM text_index WHERE text_index MATCH ?)"
        args = [*args, fts_phrase(folded)]
    else:  # too short for the index: every folded copy is scanned
        source = "text_folds t"
        clause = f"{where} AND" if where else "WHERE"
        clause += " instr(t.folded, ?) > 0"
        args = [*args, folded]
    found = conn.execute(
        f"SELECT t.run_id, t.seq, t.kind, t.label FROM {source} {clause} "
        "ORDER BY t.run_id, t.seq, t.kind",
        args,
    ).fetchall()
    hits = []
    for key in found[: filters.limit]:
        r = conn.execute(
            "SELECT cycle, text FROM texts WHERE run_id = ? AND seq = ? AND kind = ? AND label = ?",
            tuple(key),
        ).fetchone()
        match = keyword_match(r["text"], filters.q, context=SNIPPET_CHARS)
        if match is None:  # cannot happen: the folded copy matched
            continue
        hits.append(
            SearchHit(
                run_id=key["run_id"],
                cycle=r["cycle"],
                seq=key["seq"],
                kind=key["kind"],
                label=key["label"],
                before=match.before,
                match=match.match,
                after=match.after,
                score=None,
                persistent=_by_platform(conn, key["run_id"], key["seq"], key["kind"], key["label"]),
            )
        )
    return hits, len(found)


def fts_phrase(text: str) -> str:
    """``text`` as one FTS5 string: in double quotes, a quote doubled; nothing in it is
    an operator or a pattern."""
    return '"' + text.replace('"', '""') + '"'


def _semantic(
    conn: sqlite3.Connection,
    filters: SearchFilters,
    where: str,
    args: list[Any],
    embedder: TextEmbedder,
) -> list[SearchHit]:
    rows = conn.execute(
        f"SELECT run_id, seq, cycle, kind, label, text, vector FROM texts t {where} "
        "ORDER BY run_id, seq, kind",
        args,
    ).fetchall()
    texts = [
        SearchText(r["run_id"], r["seq"], r["cycle"], r["kind"], r["label"], r["text"])
        for r in rows
    ]
    query = embedder.query(filters.q)
    logged = [_logged(r["vector"], len(query)) for r in rows]
    vectors = embedder.fill(
        [t.text for t in texts], logged, scope="narrow it with a run, an experiment or a kind"
    )
    ranked = semantic_ranking(query, texts, vectors, filters.limit)
    return [_semantic_hit(conn, text, score) for text, score in ranked]


def _logged(blob: bytes | None, dimension: int) -> Vector | None:
    """A text's logged vector, if it is one of the query's model (a run may have
    embedded with another model: its texts are then embedded here, with this one)."""
    if blob is None or len(blob) != 4 * dimension:
        return None
    return np.frombuffer(blob, dtype="<f4")


def _by_platform(conn: sqlite3.Connection, run_id: str, seq: int, kind: str, key: str) -> bool:
    """Whether a memory text is a value the platform's memory policy wrote, by the
    memory change the same event made (its provenance, not the key's prefix)."""
    if kind != "memory":
        return False
    row = conn.execute(
        "SELECT written_by FROM memory_changes WHERE run_id = ? AND seq = ? AND key = ?",
        (run_id, seq, key),
    ).fetchone()
    return row is not None and row[0] == "platform"


def _semantic_hit(conn: sqlite3.Connection, text: SearchText, score: float) -> SearchHit:
    body = text.text
    cut = len(body) > SEMANTIC_PREVIEW_CHARS
    return SearchHit(
        run_id=text.run_id,
        cycle=text.cycle,
        seq=text.seq,
        kind=text.kind,
        label=text.label,
        before="",
        match=body[:SEMANTIC_PREVIEW_CHARS],
        after="…" if cut else "",
        score=round(score, 4),
        persistent=_by_platform(conn, text.run_id, text.seq, text.kind, text.label),
    )
