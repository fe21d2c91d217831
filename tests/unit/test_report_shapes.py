"""The report of experiments of every shape the platform makes: the README's 2 x 2 swap
(a ``fork`` section), one replica per model, uneven replicas. Each crashed with a
traceback (a paired test of one pair; forks filed as a pseudo-model); now each is a
page, with a note where a statistic needs more runs."""

from __future__ import annotations

import pytest

from contreact_analysis.frames import build_frames
from contreact_analysis.report import build_report, render_report
from contreact_events.catalog import Event
from tests.support.swap_runs import swap


def shapes() -> dict[str, dict[str, list[Event]]]:
    uneven = swap("uneven", letters=("A", "B"), forks=False)
    del uneven.logs["uneven-B-B"]
    return {
        "swap": dict(swap("swap").logs),
        "one": dict(swap("one", letters=("A",), forks=False).logs),
        "uneven": dict(uneven.logs),
    }


@pytest.mark.parametrize("shape", ["swap", "one", "uneven"])
def test_every_shape_gets_a_report(shape: str) -> None:
    frames = build_frames(shapes()[shape])
    report = build_report(frames, title=shape, command="c", resamples=99)
    html = render_report(report)
    assert report.groups == ["A", "B"] and "<h2>Table 1" in html
    if shape != "swap":
        assert any("a paired test needs two or more pairs" in n for n in report.notes)


def test_the_swaps_forks_are_groups_of_their_own_when_asked() -> None:
    frames = build_frames(swap("swap").logs)
    report = build_report(frames, title="swap", command="c", forks="as-rows", resamples=99)
    assert report.groups == ["A", "B", "A -> B at 2", "B -> A at 2"]
    assert [m["label"] for m in report.design["forks"]] == ["A -> B at 2", "B -> A at 2"]
    cells = {row["metric"]: row["cells"] for row in report.table1}
    assert cells["reflection_kchars"]["A -> B at 2"]["mean"] == 2.0  # its own cycles, 3 and 4
    left_out = build_report(frames, title="swap", command="c", resamples=99)
    assert left_out.groups == ["A", "B"]
    assert any("4 fork run(s) left out" in note for note in left_out.notes)
