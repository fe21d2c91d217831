"""The experiment table and summary, folded from run logs (no Redis here)."""

from __future__ import annotations

from pathlib import Path

from contreact_bus.experiments import ReplicaEntry
from contreact_cli.views.experiment import LiveTable, RunView, summary, table
from tests.support.sim import Sim, make_config, say


def view(run_id: str, label: str, letter: str, *, backend_model: str | None = None) -> RunView:
    sim = Sim(make_config(run_id=run_id, cycle_count=2, model_name="m1"))
    sim.send("RunRequested", config=sim.config.model_dump(mode="json"))
    check = sim.task()
    sim.send(
        "ModelChecked",
        check.task_id,
        ok=True,
        backend="embedded" if backend_model else "scripted",
        model=backend_model or "m1",
    )
    sim.drive([say("", ("write", {"key": "k", "value": "v"})), say("a reflection")])
    entry = ReplicaEntry(f"{label}-{letter}", label, letter, "m1", run_id, 1, "0" * 64)
    out = RunView(entry)
    out.take(sim.log)
    return out


def test_rows_table_and_summary() -> None:
    views = [view("e-a-A", "a", "A"), view("e-b-A", "b", "A", backend_model="gemma-270m")]
    rows = [v.row() for v in views]
    first = rows[0]
    assert (first["status"], first["cycle"], first["cycle_count"], first["backend"]) == (
        "completed",
        2,
        2,
        "scripted",
    )
    assert first["tokens"] == 4 * 15 and first["wall_seconds"] is not None
    lines = table(rows)
    assert lines[0].split()[:4] == ["MODEL", "REP", "STATUS", "CYCLE"]
    assert "completed!model" in lines[2]  # another model than the configured one ran
    text = "\n".join(summary(rows))
    assert "WARNING: e-b-A ran gemma-270m on embedded, not the configured m1" in text


def test_without_a_terminal_one_line_per_change() -> None:
    printed: list[str] = []
    live = LiveTable(printed.append, interactive=False)
    rows = [view("e-a-A", "a", "A").row()]
    live.show(rows)
    live.show(rows)  # nothing changed: nothing printed
    assert printed == ["e-a-A: completed, cycle 2/2, 60 tokens"]


def test_unknown_runs_are_submitted(tmp_path: Path) -> None:
    entry = ReplicaEntry("a-A", "a", "A", "m1", "e-a-A", 1, "0" * 64)
    row = RunView(entry).row()
    assert (row["status"], row["tokens"], row["backend"]) == ("submitted", 0, "")
