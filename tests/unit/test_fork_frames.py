"""A fork in the dataframes (``contreact analyze``): labelled ``PARENT -> TARGET at K``
with its parent's replica letter (``exswap-A-A-to-B`` was label ``A-A-to``, replica
``B``), its rows and figures its own cycles' (K+1..) unless the copied ones are asked
for (``inherited``), flagged as such."""

from __future__ import annotations

import pytest

from contreact_analysis.frames import build_frames
from tests.support.swap_runs import swap

SWAP = swap("exswap", letters=("A",))


def test_a_fork_is_labelled_by_its_parent_target_and_k_and_counts_its_own_cycles() -> None:
    frames = build_frames(SWAP.logs)
    runs = frames.runs.set_index("run_id")
    fork = runs.loc["exswap-A-A-to-B"]
    assert (fork["label"], fork["replica"], fork["kind"]) == ("A -> B at 2", "A", "fork")
    assert (fork["parent_run_id"], fork["at_cycle"], fork["cycles_done"]) == ("exswap-A-A", 2, 2)
    # model-b writes 1,000 characters a reflection: its own cycles 3 and 4 only
    assert fork["reflection_kchars"] == pytest.approx(2.0)
    assert fork["created_at"] > runs.loc["exswap-A-A", "ended_at"]
    mine = frames.cycles[frames.cycles["run_id"] == "exswap-A-A-to-B"]
    assert mine["cycle"].tolist() == [3, 4] and not mine["inherited"].any()
    assert set(frames.events[frames.events["run_id"] == "exswap-A-A-to-B"]["type"]) >= {"RunForked"}
    parent = runs.loc["exswap-A-A"]
    assert (parent["label"], parent["kind"]) == ("A", "replica")


def test_the_copied_cycles_when_asked() -> None:
    frames = build_frames(SWAP.logs, inherited=True)
    fork = frames.runs.set_index("run_id").loc["exswap-A-A-to-B"]
    assert fork["reflection_kchars"] == pytest.approx(2.02) and fork["cycles_done"] == 4
    mine = frames.cycles[frames.cycles["run_id"] == "exswap-A-A-to-B"]
    assert mine["cycle"].tolist() == [1, 2, 3, 4]
    assert mine["inherited"].tolist() == [True, True, False, False]
