"""The pool's placement policy (``contreact_llm.scheduling.pool``), pure: a run sticks to
its host while it is up, runs spread evenly, a run moves when its host is down, and a
pool with every host down gets one line naming them all. And the record: the host of
each call in the run log (``LLMResponded`` 3), older logs read with it unknown."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from contreact_bus.experiments import ReplicaEntry
from contreact_cli.views.experiment import RunView, table
from contreact_cli.views.progress import ProgressPrinter
from contreact_events.catalog.cycle import LLMResponded
from contreact_events.core.fold import fold_all
from contreact_events.history.export import export_records
from contreact_events.history.replay import replay_check
from contreact_events.history.run_summary import run_summary
from contreact_events.wire.codec import event_from_json
from contreact_llm.scheduling.pool import all_down, choose_host, pinned_counts, tie_break
from contreact_ui.read_models.describe import describe
from tests.support.pool_sim import MOVED_AFTER, POOL, pool_run

HOSTS = ("http://gpu1:11434", "http://gpu2:11434", "http://gpu3:11434")


def place_all(
    runs: list[str], hosts: tuple[str, ...], down: frozenset[str] = frozenset()
) -> dict[str, str]:
    """Pin runs one after another, as the workers do (each sees the pins before it)."""
    pins: dict[str, str] = {}
    for run in runs:
        host = choose_host(run, hosts, pin=None, down=down, pinned=pinned_counts(pins, pins))
        assert host is not None
        pins[run] = host
    return pins


def test_a_run_keeps_its_host_while_it_is_up_whatever_the_load() -> None:
    crowded = {HOSTS[0]: 9, HOSTS[1]: 0, HOSTS[2]: 0}
    assert choose_host("r", HOSTS, pin=HOSTS[0], down=(), pinned=crowded) == HOSTS[0]


def test_runs_spread_evenly_over_the_hosts() -> None:
    pins = place_all([f"run-{n:03d}" for n in range(30)], HOSTS)
    assert sorted(Counter(pins.values()).values()) == [10, 10, 10]
    pins = place_all([f"run-{n:03d}" for n in range(31)], HOSTS)
    assert sorted(Counter(pins.values()).values()) == [10, 10, 11]


def test_a_new_run_goes_to_the_host_with_fewest_live_runs_and_ended_runs_do_not_count() -> None:
    pins = {"a": HOSTS[0], "b": HOSTS[0], "c": HOSTS[1], "gone": HOSTS[2], "gone2": HOSTS[2]}
    live = {"a", "b", "c"}
    counts = pinned_counts(pins, live)
    assert counts == {HOSTS[0]: 2, HOSTS[1]: 1}
    assert choose_host("new", HOSTS, pin=None, down=(), pinned=counts) == HOSTS[2]


def test_ties_are_broken_the_same_way_on_every_worker_and_differ_between_runs() -> None:
    first = [choose_host(f"r{n}", HOSTS, pin=None, down=(), pinned={}) for n in range(12)]
    again = [choose_host(f"r{n}", HOSTS, pin=None, down=(), pinned={}) for n in range(12)]
    assert first == again  # deterministic: the same inputs, the same host
    assert len(set(first)) > 1  # runs placed at once by several workers do not all pile up
    expected = min(HOSTS, key=lambda host: tie_break("r0", host))
    assert first[0] == expected


def test_a_run_whose_host_is_down_moves_to_the_least_loaded_up_host() -> None:
    counts = {HOSTS[0]: 3, HOSTS[1]: 2, HOSTS[2]: 1}
    moved = choose_host("r", HOSTS, pin=HOSTS[2], down={HOSTS[2]}, pinned=counts)
    assert moved == HOSTS[1]


def test_after_a_host_dies_its_runs_spread_over_the_others() -> None:
    runs = [f"run-{n:02d}" for n in range(12)]
    pins = place_all(runs, HOSTS)
    dead = HOSTS[0]
    moved: dict[str, str] = {}
    for run in runs:
        others = {r: h for r, h in pins.items() if r != run}
        host = choose_host(
            run, HOSTS, pin=pins[run], down={dead}, pinned=pinned_counts(others, others)
        )
        assert host is not None and host != dead
        moved[run] = pins[run] = host
    assert Counter(moved.values()) == Counter({HOSTS[1]: 6, HOSTS[2]: 6})
    # the runs that were not on the dead host kept theirs
    survivors = [r for r, h in place_all(runs, HOSTS).items() if h != dead]
    assert all(moved[r] == place_all(runs, HOSTS)[r] for r in survivors)


def test_a_pin_outside_the_pool_is_not_kept() -> None:
    assert choose_host("r", HOSTS[:2], pin="http://old:11434", down=(), pinned={}) in HOSTS[:2]


def test_a_pool_with_every_host_down_has_no_host_and_one_line_naming_each() -> None:
    assert choose_host("r", HOSTS, pin=HOSTS[0], down=set(HOSTS), pinned={}) is None
    why = {HOSTS[0]: "connection refused", HOSTS[1]: "no answer within 600 s"}
    line = all_down("llama3", HOSTS, why)
    assert "\n" not in line
    assert all(host in line for host in HOSTS)
    assert "connection refused" in line and "no answer within 600 s" in line
    assert "ollama serve" in line and "ollama_client_config.hosts" in line


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_the_saved_pool_log_records_each_calls_host_and_older_logs_read_it_as_unknown() -> None:
    pool = FIXTURES / "runlog-v6-pool-host.jsonl"
    events = [event_from_json(line) for line in pool.read_bytes().splitlines()]
    hosts = [e.host for e in events if isinstance(e, LLMResponded)]
    assert hosts == [POOL[0]] * MOVED_AFTER + [POOL[1]] * 3
    state = fold_all(events)
    assert state.status == "completed" and state.host == POOL[1]
    assert run_summary(state).host == POOL[1]
    assert replay_check(events).ok
    assert pool_run().log == events  # the generator still makes the saved log
    calls = [r["payload"] for r in export_records(events) if r["event_type"] == "LLM_INVOCATION"]
    assert [c["host"] for c in calls] == hosts  # the export names the host of each call
    older = FIXTURES / "runlog-v5-budget-stop.jsonl"  # LLMResponded 2
    lines = older.read_bytes().splitlines()
    stored = [line for line in lines if b'"type":"LLMResponded"' in line]
    assert stored and all(b'"host"' not in line for line in stored)
    assert all(event_from_json(line).host is None for line in stored)
    assert fold_all([event_from_json(line) for line in lines]).host == ""


def test_the_experiment_table_and_the_dashboards_timeline_show_the_host() -> None:
    sim = pool_run()
    entry = ReplicaEntry("a-A", "a", "A", sim.config.model_name, sim.config.run_id, 1, "0" * 64)
    view = RunView(entry)
    view.take(sim.log)
    row = view.row()
    assert row["host"] == POOL[1]
    header, line = table([row])
    assert "HOST" in header.split() and " gpu2:11434 " in line
    answers = [e for e in sim.log if isinstance(e, LLMResponded)]
    assert describe(answers[0]).startswith(f"calls write from {POOL[0]}")
    assert describe(answers[-1]).startswith(f"answer from {POOL[1]}: Cycle 3")


def test_following_a_run_says_which_host_serves_it_and_when_it_moves() -> None:
    printed: list[str] = []
    printer = ProgressPrinter(printed.append)
    for event in pool_run().log:
        printer.show(event)
    hosts = [line.strip() for line in printed if "served by" in line]
    assert hosts == [f"served by {POOL[0]}", f"now served by {POOL[1]} (was {POOL[0]})"]
