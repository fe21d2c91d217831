"""Where a run stands in its experiment (``config.run_places``): replicas under their
label, the file's forks as ``PARENT -> TARGET at K`` groups of their own, a manual fork
outside the experiment's tables, the current attempts only, forks as asked."""

from __future__ import annotations

from contreact_events.config.experiment import label_and_replica
from contreact_events.config.run_places import RunFacts, RunName, run_name, run_places, select


def facts(*runs: tuple[str, str, str, int]) -> list[RunFacts]:
    """(run id, model, parent, K) of experiment ``ex``."""
    return [RunFacts(r, "ex", model, "", parent, k) for r, model, parent, k in runs]


SWAP = facts(
    ("ex-A-A", "m/a", "", 0),
    ("ex-A-B", "m/a", "", 0),
    ("ex-B-A", "m/b", "", 0),
    ("ex-B-B", "m/b", "", 0),
    ("ex-A-A-to-B", "m/b", "ex-A-A", 3),
    ("ex-A-B-to-B", "m/b", "ex-A-B", 3),
    ("ex-B-A-to-A", "m/a", "ex-B-A", 3),
    ("ex-B-B-to-A", "m/a", "ex-B-B", 3),
)


def test_a_forks_run_id_parses_to_its_parent_and_target() -> None:
    # analyze read exswap-A-A-to-B as label "A-A-to", replica "B"
    assert label_and_replica("exswap-A-A-to-B", "exswap") is None
    assert run_name("exswap-A-A-to-B", "exswap") == RunName("A", "A", 1, "B")
    assert run_name("ex-GPT-5-B.2-to-O3", "ex") == RunName("GPT-5", "B", 2, "O3")
    assert run_name("ex-GPT-5-B.2", "ex") == RunName("GPT-5", "B", 2, None)
    assert label_and_replica("ex-GPT-5-B.2", "ex") == ("GPT-5", "B")
    assert run_name("other-A-A", "ex") is None
    # a label that ends as a fork's id does is a replica when the log says it is no fork
    assert run_name("ex-X-B-to-A", "ex", fork=False) == RunName("X-B-to", "A")


def test_the_swap_replicas_by_label_forks_by_parent_target_and_k() -> None:
    places = run_places(SWAP)
    assert [(p.kind, p.group, p.letter) for p in places.values()] == [
        ("replica", "A", "A"),
        ("replica", "A", "B"),
        ("replica", "B", "A"),
        ("replica", "B", "B"),
        ("fork", "A -> B at 3", "A"),
        ("fork", "A -> B at 3", "B"),
        ("fork", "B -> A at 3", "A"),
        ("fork", "B -> A at 3", "B"),
    ]
    fork = places["ex-A-A-to-B"]
    assert (fork.label, fork.target, fork.first_cycle, fork.model) == ("A", "B", 4, "m/b")


def test_a_manual_fork_is_outside_the_experiments_tables() -> None:
    runs = [
        *SWAP[:4],
        *facts(("ex-A-A-c3-fork", "m/b", "ex-A-A", 3), ("ex-A-B-c2-fork", "m/x", "ex-A-B", 2)),
    ]
    places = run_places(runs)
    manual = places["ex-A-A-c3-fork"]
    assert (manual.kind, manual.group, manual.letter) == (
        "outside",
        "A-A -> B at 3",
        "ex-A-A-c3-fork",
    )
    assert places["ex-A-B-c2-fork"].group == "A-B -> m/x at 2"  # a model of no label
    chosen = select(places.values(), "as-rows")
    assert [p.run_id for p in chosen.runs] == ["ex-A-A", "ex-A-B", "ex-B-A", "ex-B-B"]
    assert chosen.outside == ("ex-A-A-c3-fork", "ex-A-B-c2-fork")


def test_current_attempts_only_and_forks_as_asked() -> None:
    runs = [
        *facts(("ex-A-A", "m/a", "", 0), ("ex-A-A.2", "m/a", "", 0), ("ex-B-A", "m/b", "", 0)),
        *facts(("ex-A-A-to-B", "m/b", "ex-A-A", 1), ("ex-A-A.2-to-B", "m/b", "ex-A-A.2", 1)),
        RunFacts("lone", "ex", "m/a", "m/z"),
    ]
    places = run_places(runs)
    assert places["lone"].group == "m/z"  # a run of its own: the model that ran
    none = select(places.values())
    assert [p.run_id for p in none.runs] == ["ex-A-A.2", "ex-B-A", "lone"]
    assert none.superseded == ("ex-A-A", "ex-A-A-to-B") and none.forks == ("ex-A-A.2-to-B",)
    only = select(places.values(), "only")
    assert [p.run_id for p in only.runs] == ["ex-A-A.2-to-B"]
    rows = select(places.values(), "as-rows")
    assert [p.run_id for p in rows.runs] == ["ex-A-A.2", "ex-B-A", "ex-A-A.2-to-B", "lone"]
    assert none.note_lines("none")[0].startswith("2 earlier attempt(s) left out")
